package httpapi

import (
	"context"
	"encoding/json"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/engines"
	"github.com/svcplatform/svc/shared/agentapi"
)

func toConfigChanges(in []agentapi.ConfigChange) []contract.EngineConfigChange {
	out := make([]contract.EngineConfigChange, 0, len(in))
	for _, c := range in {
		out = append(out, contract.EngineConfigChange{Field: c.Field, OldValue: c.OldValue, NewValue: c.NewValue, RestartRequired: c.RestartRequired})
	}
	return out
}

func toConfigPlan(p engines.Plan) contract.EngineConfigPlan {
	return contract.EngineConfigPlan{NodeId: p.NodeID, FileName: p.FileName, CurrentSha256: p.CurrentSha256, PlannedSha256: p.PlannedSha256,
		Changed: p.Changed, Valid: p.Valid, Message: p.Message, Changes: toConfigChanges(p.Changes), Diff: p.Diff, RestartRequired: p.RestartRequired}
}

// toConfigApplied is the 200 body of a configuration change: the command
// to follow when the agent had not finished, its result otherwise.
func toConfigApplied(c engines.Change[agentapi.ConfigApplyResult]) (contract.EngineConfigApplyAnswer, error) {
	var out contract.EngineConfigApplyAnswer
	if !c.Outcome.Done {
		return out, out.FromNodeCommandAccepted(accepted(c.Outcome))
	}
	r := c.Result
	return out, out.FromEngineConfigApplyResult(contract.EngineConfigApplyResult{NodeId: c.Outcome.Node.NodeID, CommandId: c.Outcome.Command.CommandID,
		FileName: r.FileName, Applied: r.Applied, BackupFile: r.BackupFile, Sha256: r.Sha256, Reloaded: r.Reloaded, RolledBack: r.RolledBack,
		RestartRequired: r.RestartRequired, Message: r.Message, Changes: toConfigChanges(r.Changes)})
}

func (e *engineEndpoints) GetEngineConfig(ctx context.Context, r contract.GetEngineConfigRequestObject) (contract.GetEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	d, err := e.engines.Config(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId))
	if err != nil {
		return nil, err
	}
	managed := append([]string{}, d.ManagedFields...)
	return contract.GetEngineConfig200JSONResponse{NodeId: d.NodeID, MediaServerId: d.MediaServerID, FileName: d.FileName, Sha256: d.Sha256,
		Settings: d.Settings, ManagedFields: managed}, nil
}

func (e *engineEndpoints) PlanEngineConfig(ctx context.Context, r contract.PlanEngineConfigRequestObject) (contract.PlanEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	p, err := e.engines.PlanConfig(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId),
		agentapi.ConfigPatch{Settings: r.Body.Settings, ExpectedSha256: deref(r.Body.ExpectedSha256, "")})
	if err != nil {
		return nil, err
	}
	return contract.PlanEngineConfig200JSONResponse(toConfigPlan(p)), nil
}

func (e *engineEndpoints) ApplyEngineConfig(ctx context.Context, r contract.ApplyEngineConfigRequestObject) (contract.ApplyEngineConfigResponseObject, error) {
	ctx = requestContext(ctx)
	c, err := e.engines.ApplyConfig(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId),
		agentapi.ConfigPatch{Settings: r.Body.Settings, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, r.Body.Reason, waitFor(r.Body.WaitSeconds))
	if err != nil {
		return nil, err
	}
	out, err := toConfigApplied(c)
	if err != nil {
		return nil, err
	}
	return contract.ApplyEngineConfig200JSONResponse(out), nil
}

func (e *engineEndpoints) GetEngineRawConfig(ctx context.Context, r contract.GetEngineRawConfigRequestObject) (contract.GetEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	raw, err := e.engines.RawConfig(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId))
	if err != nil {
		return nil, err
	}
	return contract.GetEngineRawConfig200JSONResponse{NodeId: raw.NodeID, FileName: raw.FileName, Content: raw.Content, Sha256: raw.Sha256}, nil
}

func (e *engineEndpoints) PlanEngineRawConfig(ctx context.Context, r contract.PlanEngineRawConfigRequestObject) (contract.PlanEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	p, err := e.engines.PlanRawConfig(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId),
		agentapi.RawConfigChange{Content: r.Body.Content, ExpectedSha256: deref(r.Body.ExpectedSha256, "")})
	if err != nil {
		return nil, err
	}
	return contract.PlanEngineRawConfig200JSONResponse(toConfigPlan(p)), nil
}

func (e *engineEndpoints) ApplyEngineRawConfig(ctx context.Context, r contract.ApplyEngineRawConfigRequestObject) (contract.ApplyEngineRawConfigResponseObject, error) {
	ctx = requestContext(ctx)
	c, err := e.engines.ApplyRawConfig(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId),
		agentapi.RawConfigChange{Content: r.Body.Content, ExpectedSha256: deref(r.Body.ExpectedSha256, "")}, r.Body.Reason, waitFor(r.Body.WaitSeconds))
	if err != nil {
		return nil, err
	}
	out, err := toConfigApplied(c)
	if err != nil {
		return nil, err
	}
	return contract.ApplyEngineRawConfig200JSONResponse(out), nil
}

func (e *engineEndpoints) GetEngineCoreSettings(ctx context.Context, r contract.GetEngineCoreSettingsRequestObject) (contract.GetEngineCoreSettingsResponseObject, error) {
	ctx = requestContext(ctx)
	c, err := e.engines.CoreSettings(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId))
	if err != nil {
		return nil, err
	}
	s := c.Settings
	return contract.GetEngineCoreSettings200JSONResponse{NodeId: c.NodeID, MediaServerId: c.MediaServerID, Sha256: c.Sha256,
		Settings: contract.EngineCoreSettingsValues{HttpAddr: s.HTTPAddr, RtspAddr: s.RTSPAddr, RtpPortMin: int32(s.RTPPortMin), RtpPortMax: int32(s.RTPPortMax),
			HlsFormat: contract.EngineCoreSettingsValuesHlsFormat(s.HLSFormat), HlsSegmentSeconds: int32(s.HLSSegmentSeconds), HlsSegments: int32(s.HLSSegments),
			GopCacheMaxFrames: int32(s.GOPCacheMaxFrames), ReaderQueueFrames: int32(s.ReaderQueueFrames), NoReaderTimeoutSeconds: int32(s.NoReaderTimeoutS),
			LogLevel: contract.EngineCoreSettingsValuesLogLevel(s.LogLevel)}}, nil
}

func (e *engineEndpoints) UpdateEngineCoreSettings(ctx context.Context, r contract.UpdateEngineCoreSettingsRequestObject) (contract.UpdateEngineCoreSettingsResponseObject, error) {
	ctx = requestContext(ctx)
	// The patch's fields carry the contract's JSON names, so the request's
	// settings convert by their JSON form.
	var patch agentapi.CoreSettingsPatch
	raw, err := json.Marshal(r.Body.Settings)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &patch.Settings); err != nil {
		return nil, err
	}
	patch.ExpectedSha256 = deref(r.Body.ExpectedSha256, "")
	c, err := e.engines.UpdateCoreSettings(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId), patch, r.Body.Reason, waitFor(r.Body.WaitSeconds))
	if err != nil {
		return nil, err
	}
	out, err := toConfigApplied(c)
	if err != nil {
		return nil, err
	}
	return contract.UpdateEngineCoreSettings200JSONResponse(out), nil
}
