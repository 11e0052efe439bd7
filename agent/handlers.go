package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"time"

	"github.com/svcplatform/svc/agent/commands"
	"github.com/svcplatform/svc/agent/engineconfig"
	"github.com/svcplatform/svc/agent/hosttune"
	"github.com/svcplatform/svc/agent/rtpport"
	"github.com/svcplatform/svc/agent/supervisor"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/shared/pki"
)

// decode reads a command payload strictly; a bad one fails the command
// with invalid_body.
func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return commands.Errorf(agentapi.CodeInvalid, "payload: %v", err)
	}
	return nil
}

// fail maps the agent packages' errors to command error codes.
func fail(err error) error {
	code := ""
	// The engine's own code (proxy_exists, stream_not_found, ...) is what
	// the control plane acts on.
	var ctl *supervisor.ControlError
	if errors.As(err, &ctl) && ctl.Code != "" {
		return commands.Errorf(ctl.Code, "%s", ctl.Message)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engineapi.ErrFallbackOverlap):
		code = agentapi.CodeFallbackRootOverlaps
	case errors.Is(err, engineconfig.ErrInvalid), errors.Is(err, hosttune.ErrInvalid), errors.Is(err, rtpport.ErrInvalid):
		code = agentapi.CodeInvalid
	case errors.Is(err, engineconfig.ErrConflict), errors.Is(err, rtpport.ErrTaken), errors.Is(err, hosttune.ErrVerify):
		code = agentapi.CodeConflict
	case errors.Is(err, hosttune.ErrNotPermitted):
		code = agentapi.CodeNotPermitted
	case errors.Is(err, rtpport.ErrExhausted):
		code = agentapi.CodeRTPPortsExhausted
	case errors.Is(err, rtpport.ErrNotFound):
		code = agentapi.CodeNotFound
	case errors.Is(err, engineconfig.ErrRefused), errors.Is(err, supervisor.ErrNotRunning):
		code = agentapi.CodeEngineFailed
	default:
		var ce *commands.Error
		if errors.As(err, &ce) {
			return ce
		}
		code = agentapi.CodeEngineFailed
	}
	return &commands.Error{Code: code, Message: err.Error()}
}

// noPayload wraps a handler that takes no input.
func noPayload(fn func(ctx context.Context) (any, error)) commands.Handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var none struct{}
		if err := decode(raw, &none); err != nil {
			return nil, err
		}
		out, err := fn(ctx)
		return out, fail(err)
	}
}

// with wraps a handler that decodes a payload of type T.
func with[T any](fn func(ctx context.Context, in T) (any, error)) commands.Handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in T
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		out, err := fn(ctx, in)
		if err != nil && (out == nil || reflect.ValueOf(out).IsZero()) {
			// A failure's empty result would read as data; leave it out.
			return nil, fail(err)
		}
		return out, fail(err)
	}
}

// engineAction runs a supervisor action and answers the engine's state.
func (a *agent) engineAction(fn func(context.Context) (agentapi.EngineState, error)) commands.Handler {
	return noPayload(func(ctx context.Context) (any, error) {
		if _, err := fn(ctx); err != nil {
			return a.engineState(ctx), err
		}
		return a.engineState(ctx), nil
	})
}

// handlers are the node command types this agent runs.
func (a *agent) handlers() map[string]commands.Handler {
	return map[string]commands.Handler{
		agentapi.TypePing: noPayload(func(context.Context) (any, error) {
			host, _ := os.Hostname()
			return agentapi.PingResult{NodeID: a.id.nodeID(), AgentVersion: buildinfo.Version, Hostname: host, Time: time.Now().UTC()}, nil
		}),
		agentapi.TypeAgentRestart: noPayload(func(context.Context) (any, error) {
			// The restart happens after the result is journaled and reported.
			time.AfterFunc(time.Second, func() {
				select {
				case a.restart <- struct{}{}:
				default:
				}
			})
			return map[string]any{"restarting": true, "bootId": a.bootID}, nil
		}),
		agentapi.TypeCertificateRenew: noPayload(func(ctx context.Context) (any, error) {
			reply := make(chan error, 1)
			select {
			case a.renewNow <- reply:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if err := <-reply; err != nil {
				return nil, commands.Errorf(agentapi.CodeConflict, "renewal failed: %v", err)
			}
			c := a.id.certificate()
			return map[string]any{"serial": pki.SerialHex(c), "notAfter": c.NotAfter, "renewAt": pki.RenewAt(c)}, nil
		}),
		agentapi.TypeEngineStatus:  a.engineAction(a.engine.Status),
		agentapi.TypeEngineStart:   a.engineAction(a.engine.Start),
		agentapi.TypeEngineStop:    a.engineAction(a.engine.Stop),
		agentapi.TypeEngineRestart: a.engineAction(a.engine.Restart),
		agentapi.TypeEngineReload:  a.engineAction(a.engine.Reload),
		agentapi.TypeEngineConfigGet: noPayload(func(context.Context) (any, error) {
			return a.config.Get()
		}),
		agentapi.TypeEngineConfigPlan: with(func(_ context.Context, p agentapi.ConfigPatch) (any, error) {
			return a.config.PlanPatch(p)
		}),
		agentapi.TypeEngineConfigApply: with(func(ctx context.Context, p agentapi.ConfigPatch) (any, error) {
			return a.config.ApplyPatch(ctx, p)
		}),
		agentapi.TypeEngineRawGet: noPayload(func(context.Context) (any, error) {
			return a.config.Raw()
		}),
		agentapi.TypeEngineRawPlan: with(func(_ context.Context, r agentapi.RawConfigChange) (any, error) {
			return a.config.PlanRaw(r)
		}),
		agentapi.TypeEngineRawApply: with(func(ctx context.Context, r agentapi.RawConfigChange) (any, error) {
			return a.config.ApplyRaw(ctx, r)
		}),
		agentapi.TypeEngineCoreGet: noPayload(func(context.Context) (any, error) {
			return a.config.Core()
		}),
		agentapi.TypeEngineCorePut: with(func(ctx context.Context, p agentapi.CoreSettingsPatch) (any, error) {
			return a.config.ApplyCore(ctx, p)
		}),
		agentapi.TypeHostTuningGet: noPayload(func(context.Context) (any, error) {
			return a.tuner.State(), nil
		}),
		agentapi.TypeHostTuningPlan: with(func(_ context.Context, v agentapi.TuningValues) (any, error) {
			return a.tuner.Plan(v.Values)
		}),
		agentapi.TypeHostTuningApply: with(func(_ context.Context, v agentapi.TuningValues) (any, error) {
			return a.tuner.Apply(v.Values)
		}),
		agentapi.TypeRTPLease: with(func(_ context.Context, r agentapi.LeaseRequest) (any, error) {
			return a.leases.Lease(r)
		}),
		agentapi.TypeRTPRelease: with(func(_ context.Context, r agentapi.ReleaseRequest) (any, error) {
			return a.leases.Release(r)
		}),
		agentapi.TypeRTPList: with(func(_ context.Context, r agentapi.ListLeasesRequest) (any, error) {
			return a.leases.List(r.Status, r.Direction), nil
		}),
	}
}
