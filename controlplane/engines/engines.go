// Package engines runs what the control plane asks of each media host's
// engine: its configuration file, core settings and process, the players
// it serves, its ad-hoc pull proxies and RTSP smoke tests. Every one of
// them is a node command for the host's agent (see mediaserver); this
// package chooses the command, its wait and its reason, and returns the
// agent's answer as agentapi and engineapi types. It knows nothing of HTTP
// or the contract.
package engines

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Service acts on the engines of the cluster's media hosts.
type Service struct {
	Servers *mediaserver.Service
}

// Host names the host that answered.
type Host struct {
	NodeID, MediaServerID string
}

func hostOf(o mediaserver.Outcome) Host {
	if o.Node == nil {
		return Host{}
	}
	return Host{NodeID: o.Node.NodeID, MediaServerID: o.Node.MediaServerID}
}

// Change is where a change carried by a node command ended: Outcome.Done
// is false when the wait passed first and the command goes on.
type Change[T any] struct {
	Outcome mediaserver.Outcome
	Result  T
}

// Document is a host's engine configuration as settings.
type Document struct {
	Host
	agentapi.ConfigDocument
}

// Plan previews a configuration change on one host.
type Plan struct {
	Host
	agentapi.ConfigPlan
}

// Raw is a host's engine configuration file as text.
type Raw struct {
	Host
	agentapi.RawConfig
}

// Core is a host's core settings.
type Core struct {
	Host
	agentapi.CoreSettingsDocument
}

// read runs a read-only command and decodes its answer into out.
func (s *Service) read(ctx context.Context, actor audit.Actor, t mediaserver.Target, typ string, payload, out any) (Host, error) {
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Actor: actor, Read: true}, out)
	return hostOf(o), err
}

// apply runs a configuration change, waiting up to wait for its answer.
func (s *Service) apply(
	ctx context.Context,
	actor audit.Actor,
	t mediaserver.Target,
	typ string,
	payload any,
	reason string,
	wait time.Duration,
) (Change[agentapi.ConfigApplyResult], error) {
	var res agentapi.ConfigApplyResult
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Reason: reason, Actor: actor, Wait: wait}, &res)
	if err != nil {
		return Change[agentapi.ConfigApplyResult]{}, err
	}
	return Change[agentapi.ConfigApplyResult]{Outcome: o, Result: res}, nil
}

// Config reads the engine configuration of the host t names.
func (s *Service) Config(ctx context.Context, actor audit.Actor, t mediaserver.Target) (Document, error) {
	var d Document
	h, err := s.read(ctx, actor, t, agentapi.TypeEngineConfigGet, nil, &d.ConfigDocument)
	d.Host = h
	return d, err
}

// PlanConfig previews a settings patch; nothing is written.
func (s *Service) PlanConfig(ctx context.Context, actor audit.Actor, t mediaserver.Target, patch agentapi.ConfigPatch) (Plan, error) {
	var p Plan
	h, err := s.read(ctx, actor, t, agentapi.TypeEngineConfigPlan, patch, &p.ConfigPlan)
	p.Host = h
	return p, err
}

// ApplyConfig has the agent write a settings patch and reload the engine.
func (s *Service) ApplyConfig(
	ctx context.Context,
	actor audit.Actor,
	t mediaserver.Target,
	patch agentapi.ConfigPatch,
	reason string,
	wait time.Duration,
) (Change[agentapi.ConfigApplyResult], error) {
	return s.apply(ctx, actor, t, agentapi.TypeEngineConfigApply, patch, reason, wait)
}

// RawConfig reads the configuration file as text.
func (s *Service) RawConfig(ctx context.Context, actor audit.Actor, t mediaserver.Target) (Raw, error) {
	var r Raw
	h, err := s.read(ctx, actor, t, agentapi.TypeEngineRawGet, nil, &r.RawConfig)
	r.Host = h
	return r, err
}

// PlanRawConfig previews a whole new file; nothing is written.
func (s *Service) PlanRawConfig(ctx context.Context, actor audit.Actor, t mediaserver.Target, change agentapi.RawConfigChange) (Plan, error) {
	var p Plan
	h, err := s.read(ctx, actor, t, agentapi.TypeEngineRawPlan, change, &p.ConfigPlan)
	p.Host = h
	return p, err
}

// ApplyRawConfig has the agent write a whole new file, reading it back and
// rolling back when the engine refuses it.
func (s *Service) ApplyRawConfig(
	ctx context.Context,
	actor audit.Actor,
	t mediaserver.Target,
	change agentapi.RawConfigChange,
	reason string,
	wait time.Duration,
) (Change[agentapi.ConfigApplyResult], error) {
	return s.apply(ctx, actor, t, agentapi.TypeEngineRawApply, change, reason, wait)
}

// CoreSettings reads the settings operators change most.
func (s *Service) CoreSettings(ctx context.Context, actor audit.Actor, t mediaserver.Target) (Core, error) {
	var c Core
	h, err := s.read(ctx, actor, t, agentapi.TypeEngineCoreGet, nil, &c.CoreSettingsDocument)
	c.Host = h
	return c, err
}

// UpdateCoreSettings changes the core settings a patch names.
func (s *Service) UpdateCoreSettings(
	ctx context.Context,
	actor audit.Actor,
	t mediaserver.Target,
	patch agentapi.CoreSettingsPatch,
	reason string,
	wait time.Duration,
) (Change[agentapi.ConfigApplyResult], error) {
	return s.apply(ctx, actor, t, agentapi.TypeEngineCorePut, patch, reason, wait)
}
