package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
)

func (e *recordingEndpoints) ListRecordingFallbackFiles(
	ctx context.Context, r contract.ListRecordingFallbackFilesRequestObject,
) (contract.ListRecordingFallbackFilesResponseObject, error) {
	limit := 0
	if r.Params.Limit != nil {
		limit = *r.Params.Limit
	}
	files, total, err := e.recording.FallbackFiles(requestContext(ctx), "", limit)
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordingFallbackFiles200JSONResponse{Total: total, Items: []contract.RecordRootFallbackFile{}}
	for _, f := range files {
		c, err := convert[contract.RecordRootFallbackFile](f)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

func (e *recordingEndpoints) PreviewRecordingFallbackRecovery(
	ctx context.Context, r contract.PreviewRecordingFallbackRecoveryRequestObject,
) (contract.PreviewRecordingFallbackRecoveryResponseObject, error) {
	out, err := e.fallbackRecovery(ctx, r.Body, true)
	if err != nil {
		return nil, err
	}
	return contract.PreviewRecordingFallbackRecovery200JSONResponse(out), nil
}

func (e *recordingEndpoints) RunRecordingFallbackRecovery(
	ctx context.Context, r contract.RunRecordingFallbackRecoveryRequestObject,
) (contract.RunRecordingFallbackRecoveryResponseObject, error) {
	out, err := e.fallbackRecovery(ctx, r.Body, false)
	if err != nil {
		return nil, err
	}
	return contract.RunRecordingFallbackRecovery200JSONResponse(out), nil
}

func (e *recordingEndpoints) fallbackRecovery(
	ctx context.Context, body *contract.RecordRootFallbackRecoveryRequest, dryRun bool,
) (contract.RecordRootFallbackRecoveryResult, error) {
	var ids []string
	if body.FileIds != nil {
		ids = *body.FileIds
	}
	res, err := e.recording.RecoverFallback(requestContext(ctx), actor(ctx).Actor, body.MediaServerId, ids, dryRun)
	if err != nil {
		return contract.RecordRootFallbackRecoveryResult{}, err
	}
	return convert[contract.RecordRootFallbackRecoveryResult](res)
}
