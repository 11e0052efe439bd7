package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/tuning"
	"github.com/svcplatform/svc/shared/hosttuning"
)

// tuningEndpoints serves host tuning (controlplane/tuning decides which
// host answers and asks its agent).
type tuningEndpoints struct {
	tuning *tuning.Service
}

func (e *tuningEndpoints) GetHostTuning(ctx context.Context, r contract.GetHostTuningRequestObject) (contract.GetHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	st, err := e.tuning.Get(ctx, auditActor(ctx), deref(r.Params.NodeId, ""))
	if err != nil {
		return nil, err
	}
	out := contract.HostTuningState{NodeId: st.NodeID, CanApply: st.CanApply, ApplyUnavailableReason: st.ApplyUnavailableReason,
		Parameters: make([]contract.HostTuningParameter, 0, len(st.Parameters))}
	for _, p := range st.Parameters {
		out.Parameters = append(out.Parameters, contract.HostTuningParameter{Key: p.Key, Category: contract.HostTuningParameterCategory(p.Category),
			CurrentValue: p.CurrentValue, RecommendedValue: p.RecommendedValue, Description: p.Description})
	}
	return contract.GetHostTuning200JSONResponse(out), nil
}

func (e *tuningEndpoints) PlanHostTuning(ctx context.Context, r contract.PlanHostTuningRequestObject) (contract.PlanHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	plan, err := e.tuning.Compare(ctx, auditActor(ctx), deref(r.Body.NodeId, ""), r.Body.Values)
	if err != nil {
		return nil, err
	}
	return contract.PlanHostTuning200JSONResponse(contract.HostTuningPlan{NodeId: plan.NodeID, Changes: int32(plan.Changes), Items: tuningItems(plan.Items)}), nil
}

func (e *tuningEndpoints) ApplyHostTuning(ctx context.Context, r contract.ApplyHostTuningRequestObject) (contract.ApplyHostTuningResponseObject, error) {
	ctx = requestContext(ctx)
	a, err := e.tuning.Apply(ctx, auditActor(ctx), deref(r.Body.NodeId, ""), r.Body.Values, r.Body.Reason)
	if err != nil {
		return nil, err
	}
	var out contract.HostTuningApplyAnswer
	if !a.Outcome.Done {
		err = out.FromNodeCommandAccepted(accepted(a.Outcome))
	} else {
		err = out.FromHostTuningApplyResult(contract.HostTuningApplyResult{Applied: a.Result.Applied, Items: tuningItems(a.Result.Items),
			NodeId: a.Outcome.Node.NodeID, CommandId: a.Outcome.Command.CommandID})
	}
	if err != nil {
		return nil, err
	}
	return contract.ApplyHostTuning200JSONResponse(out), nil
}

func tuningItems(items []hosttuning.Item) []contract.HostTuningDiffItem {
	out := make([]contract.HostTuningDiffItem, 0, len(items))
	for _, it := range items {
		out = append(out, contract.HostTuningDiffItem{Key: it.Key, CurrentValue: it.CurrentValue, DesiredValue: it.DesiredValue,
			Changed: it.Changed, Valid: it.Valid, Message: it.Message})
	}
	return out
}
