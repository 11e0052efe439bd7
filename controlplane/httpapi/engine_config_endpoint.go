package httpapi

import (
	"context"
	"encoding/json"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
)

// read runs a read-only engine command and decodes its result.
func (e *engineEndpoints) read(ctx context.Context, t mediaserver.Target, typ string, payload, out any) (mediaserver.Outcome, error) {
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Actor: auditActor(ctx), Read: true}, out)
	return o, err
}

// apply runs a configuration change and decodes its result; acc is set
// when the agent had not finished within the wait.
func (e *engineEndpoints) apply(
	ctx context.Context,
	t mediaserver.Target,
	typ string,
	payload any,
	reason string,
	wait *int32,
) (*contract.EngineConfigApplyResult, *contract.NodeCommandAccepted, error) {
	var res contract.EngineConfigApplyResult
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Reason: reason, Actor: auditActor(ctx), Wait: waitFor(wait)}, &res)
	if err != nil {
		return nil, nil, err
	}
	if !o.Done {
		a := accepted(o)
		return nil, &a, nil
	}
	res.NodeId, res.CommandId = o.Node.NodeID, o.Command.CommandID
	if res.Changes == nil {
		res.Changes = []contract.EngineConfigChange{}
	}
	return &res, nil, nil
}

func planOut(o mediaserver.Outcome, p contract.EngineConfigPlan) contract.EngineConfigPlan {
	p.NodeId = o.Node.NodeID
	if p.Changes == nil {
		p.Changes = []contract.EngineConfigChange{}
	}
	return p
}

func (e *engineEndpoints) GetEngineConfig(ctx context.Context, r contract.GetEngineConfigRequestObject) (contract.GetEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	var doc contract.EngineConfigDocument
	o, err := e.read(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineConfigGet, nil, &doc)
	if err != nil {
		return nil, err
	}
	doc.NodeId, doc.MediaServerId = o.Node.NodeID, o.Node.MediaServerID
	return contract.GetEngineConfig200JSONResponse(doc), nil
}

func (e *engineEndpoints) PlanEngineConfig(ctx context.Context, r contract.PlanEngineConfigRequestObject) (contract.PlanEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	var p contract.EngineConfigPlan
	o, err := e.read(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineConfigPlan,
		agentapi.ConfigPatch{Settings: r.Body.Settings, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, &p)
	if err != nil {
		return nil, err
	}
	return contract.PlanEngineConfig200JSONResponse(planOut(o, p)), nil
}

func (e *engineEndpoints) ApplyEngineConfig(ctx context.Context, r contract.ApplyEngineConfigRequestObject) (contract.ApplyEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.apply(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineConfigApply,
		agentapi.ConfigPatch{Settings: r.Body.Settings, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, r.Body.Reason, r.Body.WaitSeconds)
	if err != nil {
		return nil, err
	}
	var out contract.EngineConfigApplyAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineConfigApplyResult(*res) }); err != nil {
		return nil, err
	}
	return contract.ApplyEngineConfig200JSONResponse(out), nil
}

func (e *engineEndpoints) GetEngineRawConfig(ctx context.Context, r contract.GetEngineRawConfigRequestObject) (contract.GetEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	var raw contract.MediaServiceRawConfiguration
	o, err := e.read(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineRawGet, nil, &raw)
	if err != nil {
		return nil, err
	}
	raw.NodeId = o.Node.NodeID
	return contract.GetEngineRawConfig200JSONResponse(raw), nil
}

func (e *engineEndpoints) PlanEngineRawConfig(ctx context.Context, r contract.PlanEngineRawConfigRequestObject) (contract.PlanEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	var p contract.EngineConfigPlan
	o, err := e.read(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineRawPlan,
		agentapi.RawConfigChange{Content: r.Body.Content, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, &p)
	if err != nil {
		return nil, err
	}
	return contract.PlanEngineRawConfig200JSONResponse(planOut(o, p)), nil
}

func (e *engineEndpoints) ApplyEngineRawConfig(ctx context.Context, r contract.ApplyEngineRawConfigRequestObject) (contract.ApplyEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	res, acc, err := e.apply(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineRawApply,
		agentapi.RawConfigChange{Content: r.Body.Content, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, r.Body.Reason, r.Body.WaitSeconds)
	if err != nil {
		return nil, err
	}
	var out contract.EngineConfigApplyAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineConfigApplyResult(*res) }); err != nil {
		return nil, err
	}
	return contract.ApplyEngineRawConfig200JSONResponse(out), nil
}

func (e *engineEndpoints) GetEngineCoreSettings(ctx context.Context, r contract.GetEngineCoreSettingsRequestObject) (contract.GetEngineCoreSettingsResponseObject, error) {
	ctx = requestContext(ctx)
	var cs contract.EngineCoreSettings
	o, err := e.read(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineCoreGet, nil, &cs)
	if err != nil {
		return nil, err
	}
	cs.NodeId, cs.MediaServerId = o.Node.NodeID, o.Node.MediaServerID
	return contract.GetEngineCoreSettings200JSONResponse(cs), nil
}

func (e *engineEndpoints) UpdateEngineCoreSettings(ctx context.Context, r contract.UpdateEngineCoreSettingsRequestObject) (contract.UpdateEngineCoreSettingsResponseObject, error) {
	ctx = requestContext(ctx)
	var patch agentapi.CoreSettingsPatch
	raw, _ := json.Marshal(r.Body.Settings)
	if err := json.Unmarshal(raw, &patch.Settings); err != nil {
		return nil, err
	}
	patch.ExpectedSha256 = deref(r.Body.ExpectedSha256, "")
	res, acc, err := e.apply(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeEngineCorePut, patch, r.Body.Reason, r.Body.WaitSeconds)
	if err != nil {
		return nil, err
	}
	var out contract.EngineConfigApplyAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromEngineConfigApplyResult(*res) }); err != nil {
		return nil, err
	}
	return contract.UpdateEngineCoreSettings200JSONResponse(out), nil
}
