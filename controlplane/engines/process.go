package engines

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
)

// ProcessAction is what an operator can do to an engine process.
type ProcessAction string

// The process actions, each the agent's command type.
const (
	Start   ProcessAction = agentapi.TypeEngineStart
	Stop    ProcessAction = agentapi.TypeEngineStop
	Restart ProcessAction = agentapi.TypeEngineRestart
	Reload  ProcessAction = agentapi.TypeEngineReload
)

// ErrUnknownAction refuses an action that is none of the above.
var ErrUnknownAction = fault.New(fault.Invalid, "invalid_body", "unknown engine process action")

// ActOnProcess has the host's agent start, stop, restart or reload its
// engine, waiting up to wait; Result is the engine's state afterwards.
func (s *Service) ActOnProcess(
	ctx context.Context,
	actor audit.Actor,
	t mediaserver.Target,
	action ProcessAction,
	reason string,
	wait time.Duration,
) (Change[agentapi.EngineState], error) {
	switch action {
	case Start, Stop, Restart, Reload:
	default:
		return Change[agentapi.EngineState]{}, fmt.Errorf("%w: %q", ErrUnknownAction, action)
	}
	var st agentapi.EngineState
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: t, Type: string(action), Reason: reason, Actor: actor, Wait: wait}, &st)
	if err != nil {
		return Change[agentapi.EngineState]{}, err
	}
	return Change[agentapi.EngineState]{Outcome: o, Result: st}, nil
}
