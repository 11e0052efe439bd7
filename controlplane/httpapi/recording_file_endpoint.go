package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/recording"
)

// The recorded-file operations: playback leases and the delete, restore
// and hard-delete batches of modules 06 and 11.

func (e *recordingEndpoints) CreateThirdPartyRecordingPlaybackLease(
	ctx context.Context, r contract.CreateThirdPartyRecordingPlaybackLeaseRequestObject,
) (contract.CreateThirdPartyRecordingPlaybackLeaseResponseObject, error) {
	l, srcs, err := e.recording.LeaseFile(requestContext(ctx), caller(ctx), r.FileId, playback.LeaseRequest{Protocols: protocolNames(r.Body.Protocols),
		LeaseSeconds: intPtr(r.Body.LeaseSeconds), AbsoluteLifetimeSeconds: intPtr(r.Body.AbsoluteLifetimeSeconds)})
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyRecordingPlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

// batchOp is one of the recording service's batch operations.
type batchOp func(*recording.Service, context.Context, recording.Actor, []string) ([]recording.ItemResult, error)

func (e *recordingEndpoints) batch(ctx context.Context, op batchOp, ids []string) (contract.RecordFileBatchResult, error) {
	res, err := op(e.recording, requestContext(ctx), actor(ctx).Actor, ids)
	if err != nil {
		return contract.RecordFileBatchResult{}, err
	}
	out := contract.RecordFileBatchResult{Results: []contract.RecordFileBatchItem{}}
	for _, it := range res {
		c, err := convert[contract.RecordFileBatchItem](it)
		if err != nil {
			return out, err
		}
		out.Results = append(out.Results, c)
	}
	return out, nil
}

func (e *recordingEndpoints) SoftDeleteThirdPartyRecordings(
	ctx context.Context, r contract.SoftDeleteThirdPartyRecordingsRequestObject,
) (contract.SoftDeleteThirdPartyRecordingsResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).SoftDelete, r.Body.FileIds)
	return contract.SoftDeleteThirdPartyRecordings200JSONResponse(out), err
}

func (e *recordingEndpoints) RestoreThirdPartyRecordings(
	ctx context.Context, r contract.RestoreThirdPartyRecordingsRequestObject,
) (contract.RestoreThirdPartyRecordingsResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).Restore, r.Body.FileIds)
	return contract.RestoreThirdPartyRecordings200JSONResponse(out), err
}

func (e *recordingEndpoints) HardDeleteThirdPartyRecordings(
	ctx context.Context, r contract.HardDeleteThirdPartyRecordingsRequestObject,
) (contract.HardDeleteThirdPartyRecordingsResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).HardDelete, r.Body.FileIds)
	return contract.HardDeleteThirdPartyRecordings200JSONResponse(out), err
}

func (e *recordingEndpoints) SoftDeleteRecordingFiles(
	ctx context.Context, r contract.SoftDeleteRecordingFilesRequestObject,
) (contract.SoftDeleteRecordingFilesResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).SoftDelete, r.Body.FileIds)
	return contract.SoftDeleteRecordingFiles200JSONResponse(out), err
}

func (e *recordingEndpoints) RestoreRecordingFiles(
	ctx context.Context, r contract.RestoreRecordingFilesRequestObject,
) (contract.RestoreRecordingFilesResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).Restore, r.Body.FileIds)
	return contract.RestoreRecordingFiles200JSONResponse(out), err
}

func (e *recordingEndpoints) DeleteRecordingFiles(
	ctx context.Context, r contract.DeleteRecordingFilesRequestObject,
) (contract.DeleteRecordingFilesResponseObject, error) {
	out, err := e.batch(ctx, (*recording.Service).HardDelete, r.Body.FileIds)
	return contract.DeleteRecordingFiles200JSONResponse(out), err
}

func (e *recordingEndpoints) ScanRecordingFiles(
	ctx context.Context, r contract.ScanRecordingFilesRequestObject,
) (contract.ScanRecordingFilesResponseObject, error) {
	req := recording.ScanRequest{MediaServerID: r.Body.MediaServerId}
	if r.Body.App != nil {
		req.App = *r.Body.App
	}
	if r.Body.StreamId != nil {
		req.StreamID = *r.Body.StreamId
	}
	res, err := e.recording.Scan(requestContext(ctx), actor(ctx).Actor, req)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordFileScanResult](res)
	if err != nil {
		return nil, err
	}
	return contract.ScanRecordingFiles200JSONResponse(out), nil
}
