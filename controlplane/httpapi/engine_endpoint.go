package httpapi

import (
	"context"
	"sort"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/engines"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
)

// engineEndpoints serves the engine of each media host: its process, its
// configuration and core settings, and the engine node listings (module
// 04). Changes are node commands run by the host's agent.
type engineEndpoints struct {
	nodes    *nodes.Service
	presence *nodes.Presence
	engines  *engines.Service
}

func (e *engineEndpoints) state(ctx context.Context, t mediaserver.Target) (contract.EngineProcessState, error) {
	rec, err := e.nodes.Resolve(ctx, t.NodeID, t.MediaServerID)
	if err != nil {
		return contract.EngineProcessState{}, err
	}
	if hb, at, ok := e.presence.Last(rec.NodeID); ok {
		return toEngineState(rec, &hb, &at), nil
	}
	return toEngineState(rec, nil, nil), nil
}

func (e *engineEndpoints) GetEngineProcess(ctx context.Context, r contract.GetEngineProcessRequestObject) (contract.GetEngineProcessResponseObject, error) {
	ctx = requestContext(ctx)
	st, err := e.state(ctx, target(r.Params.NodeId, r.Params.MediaServerId))
	if err != nil {
		return nil, err
	}
	return contract.GetEngineProcess200JSONResponse(st), nil
}

// processAction runs a process action and renders its result; the
// accepted command is returned instead when the agent had not finished
// within the wait.
func (e *engineEndpoints) processAction(
	ctx context.Context,
	action engines.ProcessAction,
	t mediaserver.Target,
	body *contract.EngineProcessActionRequest,
) (contract.EngineProcessActionResult, *contract.NodeCommandAccepted, error) {
	reason, wait := "", waitFor(nil)
	if body != nil {
		reason, wait = deref(body.Reason, ""), waitFor(body.WaitSeconds)
	}
	c, err := e.engines.ActOnProcess(ctx, auditActor(ctx), t, action, reason, wait)
	if err != nil {
		return contract.EngineProcessActionResult{}, nil, err
	}
	o := c.Outcome
	if !o.Done {
		a := accepted(o)
		return contract.EngineProcessActionResult{}, &a, nil
	}
	now := time.Now().UTC()
	hb := agentapi.Heartbeat{Engine: c.Result}
	ps := toEngineState(o.Node, &hb, &now)
	return contract.EngineProcessActionResult{NodeId: o.Node.NodeID, CommandId: o.Command.CommandID, Status: contract.EngineProcessActionResultStatus(o.Command.Status),
		Process: ps, Message: "the engine is " + c.Result.Status}, nil, nil
}

func (e *engineEndpoints) StartEngineProcess(ctx context.Context, r contract.StartEngineProcessRequestObject) (contract.StartEngineProcessResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.processAction(ctx, engines.Start, target(r.Params.NodeId, r.Params.MediaServerId), r.Body)
	if err != nil {
		return nil, err
	}
	var out contract.EngineProcessActionAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineProcessActionResult(res) }); err != nil {
		return nil, err
	}
	return contract.StartEngineProcess200JSONResponse(out), nil
}

func (e *engineEndpoints) StopEngineProcess(ctx context.Context, r contract.StopEngineProcessRequestObject) (contract.StopEngineProcessResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.processAction(ctx, engines.Stop, target(r.Params.NodeId, r.Params.MediaServerId), r.Body)
	if err != nil {
		return nil, err
	}
	var out contract.EngineProcessActionAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineProcessActionResult(res) }); err != nil {
		return nil, err
	}
	return contract.StopEngineProcess200JSONResponse(out), nil
}

func (e *engineEndpoints) RestartEngineProcess(ctx context.Context, r contract.RestartEngineProcessRequestObject) (contract.RestartEngineProcessResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.processAction(ctx, engines.Restart, target(r.Params.NodeId, r.Params.MediaServerId), r.Body)
	if err != nil {
		return nil, err
	}
	var out contract.EngineProcessActionAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineProcessActionResult(res) }); err != nil {
		return nil, err
	}
	return contract.RestartEngineProcess200JSONResponse(out), nil
}

func (e *engineEndpoints) ReloadEngineProcess(ctx context.Context, r contract.ReloadEngineProcessRequestObject) (contract.ReloadEngineProcessResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.processAction(ctx, engines.Reload, target(r.Params.NodeId, r.Params.MediaServerId), r.Body)
	if err != nil {
		return nil, err
	}
	var out contract.EngineProcessActionAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineProcessActionResult(res) }); err != nil {
		return nil, err
	}
	return contract.ReloadEngineProcess200JSONResponse(out), nil
}

func (e *engineEndpoints) ListEngineNodes(ctx context.Context, _ contract.ListEngineNodesRequestObject) (contract.ListEngineNodesResponseObject, error) {
	ctx = requestContext(ctx)
	recs, err := e.nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := contract.ListEngineNodes200JSONResponse{Rows: []contract.EngineNode{}}
	for _, rec := range recs {
		if rec.EnrolledAt == nil {
			continue
		}
		st, _ := e.state(ctx, mediaserver.Target{NodeID: rec.NodeID})
		out.Rows = append(out.Rows, contract.EngineNode{NodeId: rec.NodeID, MediaServerId: rec.MediaServerID, Status: contract.EngineNodeStatus(st.Status),
			AgentStatus: contract.EngineNodeAgentStatus(rec.Status), Version: st.Version, ControlAddr: st.ControlAddr, HttpAddr: st.HttpAddr,
			RtspAddr: st.RtspAddr, RtpPortMin: st.RtpPortMin, RtpPortMax: st.RtpPortMax, LastHeartbeatAt: st.ReportedAt})
	}
	return out, nil
}

// engineNode reads one enrolled engine node with its latest report.
func (e *engineEndpoints) engineNode(ctx context.Context, nodeID string) (*nodes.Record, contract.EngineProcessState, *agentapi.Heartbeat, error) {
	rec, err := e.nodes.Get(ctx, nodeID)
	if err == nil && rec.EnrolledAt == nil {
		err = nodes.ErrNotFound
	}
	if err != nil {
		return nil, contract.EngineProcessState{}, nil, err
	}
	hb, at, ok := e.presence.Last(rec.NodeID)
	if !ok {
		return rec, toEngineState(rec, nil, nil), nil, nil
	}
	return rec, toEngineState(rec, &hb, &at), &hb, nil
}

// engineAPIs are the engine control API operations the agent uses.
var engineAPIs = []contract.EngineNodeApi{
	{
		Method:      "GET",
		Path:        engineapi.PathHealth,
		Description: "health with the process id, version and stream counts",
		UsedBy:      "engine supervision (start check, health polling), engine.process.status",
	},
	{
		Method:      "POST",
		Path:        engineapi.PathReload,
		Description: "re-read the configuration file",
		UsedBy:      "engine.process.reload, engine.config.apply, engine.config.raw.apply, engine.core-settings.put",
	},
}

func (e *engineEndpoints) ListEngineNodeApis(ctx context.Context, r contract.ListEngineNodeApisRequestObject) (contract.ListEngineNodeApisResponseObject, error) {
	ctx = requestContext(ctx)
	_, st, _, err := e.engineNode(ctx, r.NodeId)
	if err != nil {
		return nil, err
	}
	out := contract.ListEngineNodeApis200JSONResponse{NodeId: r.NodeId, Rows: []contract.EngineNodeApi{}}
	for _, a := range engineAPIs {
		a.Available = st.Status == contract.EngineProcessStateStatusRunning
		out.Rows = append(out.Rows, a)
	}
	return out, nil
}

func (e *engineEndpoints) GetEngineNodeCapabilities(
	ctx context.Context,
	r contract.GetEngineNodeCapabilitiesRequestObject,
) (contract.GetEngineNodeCapabilitiesResponseObject, error) {
	ctx = requestContext(ctx)
	rec, st, hb, err := e.engineNode(ctx, r.NodeId)
	if err != nil {
		return nil, err
	}
	out := contract.GetEngineNodeCapabilities200JSONResponse{NodeId: rec.NodeID, MediaServerId: rec.MediaServerID, Version: st.Version,
		RtpPortMin: st.RtpPortMin, RtpPortMax: st.RtpPortMax, CanTune: hb != nil && hb.CanTune,
		Hooks: []string{"on_publish", "on_play", "on_stream_changed", "on_stream_none_reader", "on_record_mp4", "on_flow_report", "on_rtp_server_timeout", "on_server_keepalive"}}
	for t := range agentapi.CommandTypes {
		out.CommandTypes = append(out.CommandTypes, t)
	}
	sort.Strings(out.CommandTypes)
	run := st.Status == contract.EngineProcessStateStatusRunning
	for _, p := range []struct{ proto, dir, addr string }{
		{"rtsp", "input", st.RtspAddr}, {"rtsp", "output", st.RtspAddr}, {"http-flv", "output", st.HttpAddr},
		{"http-fmp4", "output", st.HttpAddr}, {"hls", "output", st.HttpAddr}, {"rtp-ps", "input", ""},
	} {
		out.Protocols = append(out.Protocols, contract.EngineProtocolCapability{Protocol: p.proto, Direction: contract.EngineProtocolCapabilityDirection(p.dir),
			Address: p.addr, Enabled: run && (p.addr != "" || st.RtpPortMax > 0)})
	}
	return out, nil
}

func (e *engineEndpoints) GetEngineNodeVersion(ctx context.Context, r contract.GetEngineNodeVersionRequestObject) (contract.GetEngineNodeVersionResponseObject, error) {
	ctx = requestContext(ctx)
	rec, st, _, err := e.engineNode(ctx, r.NodeId)
	if err != nil {
		return nil, err
	}
	return contract.GetEngineNodeVersion200JSONResponse{NodeId: rec.NodeID, MediaServerId: rec.MediaServerID, EngineVersion: st.Version,
		AgentVersion: rec.AgentVersion, ControlPlaneVersion: buildinfo.Version, ContractVersion: buildinfo.ContractVersion,
		MatchesControlPlane: rec.AgentVersion == buildinfo.Version, StartedAt: st.StartedAt}, nil
}
