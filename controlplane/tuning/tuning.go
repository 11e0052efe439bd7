// Package tuning reads, compares and applies the kernel and process
// limits of the cluster's hosts. A media host's values are the business of
// its node agent, asked through a node command; a cluster without media
// hosts shows (and compares with) the answering control node's own host,
// which has no agent and so cannot be changed from here.
package tuning

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/hosttuning"
)

// procSys is where a control node reads its own host's kernel parameters.
const procSys = "/proc/sys"

const agentUnavailable = "no node agent is online for this host; host tuning is applied and verified by the node agent of a media host"

var (
	// ErrInvalid: a key off the whitelist, an invalid value or no value.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid host tuning request")
	// ErrNoAgent: the change needs a node agent and none can take it.
	ErrNoAgent = fault.New(fault.Conflict, "agent_unavailable", agentUnavailable)
)

// Service answers host tuning for one control node.
type Service struct {
	// NodeID is the control node answering, whose own host stands in when
	// the cluster has no media host.
	NodeID  string
	Servers *mediaserver.Service
}

// State is a host's whitelisted parameters with their current values.
type State struct {
	NodeID string
	agentapi.TuningState
}

// Plan compares requested values with a host's current ones.
type Plan struct {
	NodeID string
	agentapi.TuningPlan
}

// Applied is where an apply ended: Outcome.Done is false when the wait
// passed first and the command goes on; otherwise Result says what the
// agent wrote and read back.
type Applied struct {
	Outcome mediaserver.Outcome
	Result  agentapi.TuningApplyResult
}

// Get reads the parameters of nodeID's host ("" for any media host).
func (s *Service) Get(ctx context.Context, actor audit.Actor, nodeID string) (State, error) {
	if local, err := s.local(ctx, nodeID); err != nil || local {
		return s.own(), err
	}
	var st agentapi.TuningState
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: nodeID}, Type: agentapi.TypeHostTuningGet, Read: true, Actor: actor}, &st)
	if err != nil {
		return State{}, err
	}
	return State{NodeID: o.Node.NodeID, TuningState: st}, nil
}

// Compare plans values against nodeID's host; it changes nothing.
func (s *Service) Compare(ctx context.Context, actor audit.Actor, nodeID string, values map[string]string) (Plan, error) {
	if err := Check(values); err != nil {
		return Plan{}, err
	}
	local, err := s.local(ctx, nodeID)
	if err != nil {
		return Plan{}, err
	}
	if local {
		items, changes, err := hosttuning.Plan(values, func(k string) string { return hosttuning.Read(procSys, k) })
		if err != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return Plan{NodeID: s.NodeID, TuningPlan: agentapi.TuningPlan{Changes: changes, Items: items}}, nil
	}
	var plan agentapi.TuningPlan
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: nodeID}, Type: agentapi.TypeHostTuningPlan,
		Payload: agentapi.TuningValues{Values: values}, Read: true, Actor: actor}, &plan)
	if err != nil {
		return Plan{}, err
	}
	return Plan{NodeID: o.Node.NodeID, TuningPlan: plan}, nil
}

// Apply has nodeID's agent write, persist and read back values, waiting up
// to the read wait for its answer.
func (s *Service) Apply(ctx context.Context, actor audit.Actor, nodeID string, values map[string]string, reason string) (Applied, error) {
	if err := Check(values); err != nil {
		return Applied{}, err
	}
	if local, err := s.local(ctx, nodeID); err != nil || local {
		if err == nil {
			err = ErrNoAgent
		}
		return Applied{}, err
	}
	var res agentapi.TuningApplyResult
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: nodeID}, Type: agentapi.TypeHostTuningApply,
		Payload: agentapi.TuningValues{Values: values}, Reason: reason, Wait: mediaserver.ReadWait, Actor: actor}, &res)
	if err != nil {
		return Applied{}, err
	}
	return Applied{Outcome: o, Result: res}, nil
}

// Check refuses keys off the whitelist and invalid values before any agent
// is asked.
func Check(values map[string]string) error {
	items, _, err := hosttuning.Plan(values, func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := hosttuning.FirstInvalid(items); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// local reports whether a request falls back to this control node's host:
// no node named (or this node named) and no media host to ask.
func (s *Service) local(ctx context.Context, nodeID string) (bool, error) {
	if nodeID == s.NodeID {
		return true, nil
	}
	_, err := s.Servers.Online(ctx, mediaserver.Target{NodeID: nodeID})
	if nodeID == "" && errors.Is(err, nodes.ErrNoMediaHosts) {
		return true, nil
	}
	return false, err
}

// own is this control node's host: its values, and no way to change them.
func (s *Service) own() State {
	st := State{NodeID: s.NodeID, TuningState: agentapi.TuningState{ApplyUnavailableReason: agentUnavailable, Parameters: []agentapi.TuningParameter{}}}
	for _, p := range hosttuning.Parameters() {
		st.Parameters = append(st.Parameters, agentapi.TuningParameter{Key: p.Key, Category: p.Category,
			CurrentValue: hosttuning.Read(procSys, p.Key), RecommendedValue: p.Recommended, Description: p.Description})
	}
	return st
}
