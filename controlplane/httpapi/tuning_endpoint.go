package httpapi

import (
	"context"
	"errors"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/shared/agentapi"
)

// tuningEndpoints serves host tuning: a media host's values are read,
// compared and applied by its node agent; a cluster without media hosts
// shows (and compares with) the answering control node's own host.
type tuningEndpoints struct {
	svc     *system.Service
	servers *mediaserver.Service
}

// local reports whether a request falls back to this control node's host:
// no node named (or this node named) and no media host to ask.
func (e *tuningEndpoints) local(ctx context.Context, nodeID *string) (bool, error) {
	id := deref(nodeID, "")
	if id == e.svc.NodeID() {
		return true, nil
	}
	_, err := e.servers.Online(ctx, mediaserver.Target{NodeID: id})
	if id == "" && errors.Is(err, nodes.ErrNoMediaHosts) {
		return true, nil
	}
	return false, err
}

func (e *tuningEndpoints) GetHostTuning(ctx context.Context, r contract.GetHostTuningRequestObject) (contract.GetHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	if local, err := e.local(ctx, r.Params.NodeId); err != nil || local {
		return contract.GetHostTuning200JSONResponse(e.svc.Tuning()), err
	}
	var st contract.HostTuningState
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: deref(r.Params.NodeId, "")}, Type: agentapi.TypeHostTuningGet,
		Read: true, Actor: auditActor(ctx)}, &st)
	if err != nil {
		return nil, err
	}
	st.NodeId = o.Node.NodeID
	return contract.GetHostTuning200JSONResponse(st), nil
}

func (e *tuningEndpoints) PlanHostTuning(ctx context.Context, r contract.PlanHostTuningRequestObject) (contract.PlanHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	if err := system.CheckTuning(r.Body.Values); err != nil {
		return nil, err
	}
	if local, err := e.local(ctx, r.Body.NodeId); err != nil || local {
		if err != nil {
			return nil, err
		}
		plan, err := e.svc.TuningPlan(r.Body.Values)
		return contract.PlanHostTuning200JSONResponse(plan), err
	}
	var plan contract.HostTuningPlan
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: deref(r.Body.NodeId, "")}, Type: agentapi.TypeHostTuningPlan,
		Payload: agentapi.TuningValues{Values: r.Body.Values}, Read: true, Actor: auditActor(ctx)}, &plan)
	if err != nil {
		return nil, err
	}
	plan.NodeId = o.Node.NodeID
	return contract.PlanHostTuning200JSONResponse(plan), nil
}

func (e *tuningEndpoints) ApplyHostTuning(ctx context.Context, r contract.ApplyHostTuningRequestObject) (contract.ApplyHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	if err := system.CheckTuning(r.Body.Values); err != nil {
		return nil, err
	}
	if local, err := e.local(ctx, r.Body.NodeId); err != nil || local {
		if err == nil {
			err = system.ErrNoTuningAgent
		}
		return nil, err
	}
	var res contract.HostTuningApplyResult
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: deref(r.Body.NodeId, "")}, Type: agentapi.TypeHostTuningApply,
		Payload: agentapi.TuningValues{Values: r.Body.Values}, Reason: r.Body.Reason, Wait: mediaserver.ReadWait, Actor: auditActor(ctx)}, &res)
	if err != nil {
		return nil, err
	}
	var out contract.HostTuningApplyAnswer
	if !o.Done {
		err = out.FromNodeCommandAccepted(accepted(o))
	} else {
		res.NodeId, res.CommandId = o.Node.NodeID, o.Command.CommandID
		err = out.FromHostTuningApplyResult(res)
	}
	if err != nil {
		return nil, err
	}
	return contract.ApplyHostTuning200JSONResponse(out), nil
}
