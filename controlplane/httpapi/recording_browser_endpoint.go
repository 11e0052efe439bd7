package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/recording"
)

func (e *recordingEndpoints) ListRecordingBrowserRoots(
	ctx context.Context, _ contract.ListRecordingBrowserRootsRequestObject,
) (contract.ListRecordingBrowserRootsResponseObject, error) {
	roots, err := e.recording.BrowserRoots(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordRootBrowserRootList](map[string]any{"items": roots})
	if err != nil {
		return nil, err
	}
	return contract.ListRecordingBrowserRoots200JSONResponse(out), nil
}

func (e *recordingEndpoints) BrowseRecordingRoot(
	ctx context.Context, r contract.BrowseRecordingRootRequestObject,
) (contract.BrowseRecordingRootResponseObject, error) {
	req := recording.BrowseRequest{MediaServerID: r.Body.MediaServerId}
	if r.Body.Root != nil {
		req.Root = string(*r.Body.Root)
	}
	if r.Body.Path != nil {
		req.Path = *r.Body.Path
	}
	res, err := e.recording.Browse(requestContext(ctx), actor(ctx).Actor, req, false)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordRootDirectoryListing](res)
	if err != nil {
		return nil, err
	}
	return contract.BrowseRecordingRoot200JSONResponse(out), nil
}

func (e *recordingEndpoints) CreateRecordingRootDirectory(
	ctx context.Context, r contract.CreateRecordingRootDirectoryRequestObject,
) (contract.CreateRecordingRootDirectoryResponseObject, error) {
	req := recording.BrowseRequest{MediaServerID: r.Body.MediaServerId, Path: r.Body.Path}
	if r.Body.Root != nil {
		req.Root = string(*r.Body.Root)
	}
	res, err := e.recording.Browse(requestContext(ctx), actor(ctx).Actor, req, true)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordRootDirectoryListing](res)
	if err != nil {
		return nil, err
	}
	return contract.CreateRecordingRootDirectory200JSONResponse(out), nil
}
