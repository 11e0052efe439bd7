package system

import (
	"fmt"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/shared/hosttuning"
)

// procSys is where this host's kernel parameters are read.
const procSys = "/proc/sys"

const agentUnavailable = "no node agent is online for this host; host tuning is applied and verified by the node agent of a media host"

// Tuning shows the whitelist with this control node's own values; media
// hosts are read through their agents (the HTTP boundary asks them first).
func (s *Service) Tuning() contract.HostTuningState {
	out := contract.HostTuningState{NodeId: s.d.NodeID, CanApply: false, ApplyUnavailableReason: agentUnavailable, Parameters: []contract.HostTuningParameter{}}
	for _, p := range hosttuning.Parameters() {
		out.Parameters = append(out.Parameters, contract.HostTuningParameter{Key: p.Key, Category: contract.HostTuningParameterCategory(p.Category),
			CurrentValue: hosttuning.Read(procSys, p.Key), RecommendedValue: p.Recommended, Description: p.Description})
	}
	return out
}

// CheckTuning refuses keys off the whitelist and invalid values before any
// agent is asked.
func CheckTuning(values map[string]string) error {
	items, _, err := hosttuning.Plan(values, func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidTuning, err)
	}
	if err := hosttuning.FirstInvalid(items); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidTuning, err)
	}
	return nil
}

// TuningPlan compares values with this control node's own host, for a
// cluster without a media host; it writes nothing.
func (s *Service) TuningPlan(values map[string]string) (contract.HostTuningPlan, error) {
	items, changes, err := hosttuning.Plan(values, func(k string) string { return hosttuning.Read(procSys, k) })
	if err != nil {
		return contract.HostTuningPlan{}, fmt.Errorf("%w: %w", ErrInvalidTuning, err)
	}
	plan := contract.HostTuningPlan{NodeId: s.d.NodeID, Changes: int32(changes), Items: []contract.HostTuningDiffItem{}}
	for _, it := range items {
		plan.Items = append(plan.Items, contract.HostTuningDiffItem{Key: it.Key, CurrentValue: it.CurrentValue, DesiredValue: it.DesiredValue,
			Changed: it.Changed, Valid: it.Valid, Message: it.Message})
	}
	return plan, nil
}

// ErrNoTuningAgent is the refusal of an apply when no agent can do it.
var ErrNoTuningAgent = fmt.Errorf("%w: %s", ErrAgentUnavailable, agentUnavailable)
