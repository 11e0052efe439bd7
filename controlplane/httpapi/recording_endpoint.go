package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/recording"
)

// recordingEndpoints serve recording sessions, the file index and the
// state model (module 06) and the third-party recording listing.
type recordingEndpoints struct {
	recording *recording.Service
	auto      *recording.Reconciler
}

// convert moves a domain value into its contract type through JSON: the
// domain structs carry the contract's property names, and what the
// contract does not name (a file's path on its media host) is left out.
func convert[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}

func (e *recordingEndpoints) StartRecording(ctx context.Context, r contract.StartRecordingRequestObject) (contract.StartRecordingResponseObject, error) {
	b := r.Body
	sess, err := e.recording.Start(requestContext(ctx), actor(ctx).Actor, recording.StartRequest{StreamRef: recording.StreamRef{
		ChannelID: deref(b.ChannelId, ""), MediaServerID: deref(b.MediaServerId, ""), Vhost: deref(b.Vhost, ""), App: deref(b.App, ""),
		StreamID: deref(b.StreamId, "")}, SegmentSeconds: int(deref(b.SegmentSeconds, 0))})
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordingSession](sess)
	return contract.StartRecording200JSONResponse(out), err
}

func (e *recordingEndpoints) StopRecording(ctx context.Context, r contract.StopRecordingRequestObject) (contract.StopRecordingResponseObject, error) {
	b := r.Body
	sess, err := e.recording.Stop(requestContext(ctx), actor(ctx).Actor, recording.StreamRef{ChannelID: deref(b.ChannelId, ""),
		MediaServerID: deref(b.MediaServerId, ""), Vhost: deref(b.Vhost, ""), App: deref(b.App, ""), StreamID: deref(b.StreamId, "")})
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordingSession](sess)
	return contract.StopRecording200JSONResponse(out), err
}

func (e *recordingEndpoints) ListRecordingSessions(ctx context.Context, r contract.ListRecordingSessionsRequestObject) (contract.ListRecordingSessionsResponseObject, error) {
	p := r.Params
	f := recording.SessionFilter{MediaServerID: deref(p.MediaServerId, ""), NodeID: deref(p.NodeId, ""), ChannelID: deref(p.ChannelId, ""),
		App: deref(p.App, ""), StreamID: deref(p.StreamId, ""), Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 20))}
	if p.State != nil {
		f.State = string(*p.State)
	}
	if p.RecordSource != nil {
		f.RecordSource = string(*p.RecordSource)
	}
	rows, total, err := e.recording.Sessions(requestContext(ctx), f)
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordingSessions200JSONResponse{Page: int32(max(f.Page, 1)), PageSize: int32(pageSizeOf(f.PageSize)), Total: total,
		Rows: []contract.RecordingSession{}}
	for _, s := range rows {
		c, err := convert[contract.RecordingSession](s)
		if err != nil {
			return nil, err
		}
		out.Rows = append(out.Rows, c)
	}
	return out, nil
}

// pageSizeOf is the page size a listing used for a requested one.
func pageSizeOf(n int) int {
	switch {
	case n <= 0:
		return 20
	case n > recording.MaxPageSize:
		return recording.MaxPageSize
	}
	return n
}

func (e *recordingEndpoints) GetRecordingStateModel(context.Context, contract.GetRecordingStateModelRequestObject) (contract.GetRecordingStateModelResponseObject, error) {
	out, err := convert[contract.RecordingStateModel](recording.Model)
	return contract.GetRecordingStateModel200JSONResponse(out), err
}

func (e *recordingEndpoints) RunAutoRecordOnce(ctx context.Context, r contract.RunAutoRecordOnceRequestObject) (contract.RunAutoRecordOnceResponseObject, error) {
	if at := r.Params.At; at != nil && (time.Since(*at) > time.Minute || time.Until(*at) > time.Minute) {
		return nil, newError(http.StatusBadRequest, "invalid_query",
			"at: a pass acts on the present (at absent or within a minute of now); GET /api/v2/recording/plans/{planId}/evaluate?at= answers for another time")
	}
	res, err := e.auto.RunOnce(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	return contract.RunAutoRecordOnce200JSONResponse{Started: int32(res.Started), Stopped: int32(res.Stopped), Resumed: int32(res.Resumed),
		Failed: int32(res.Failed), Unplaced: int32(res.Unplaced)}, nil
}

func (e *recordingEndpoints) EvaluateAutoRecordStream(
	ctx context.Context, r contract.EvaluateAutoRecordStreamRequestObject,
) (contract.EvaluateAutoRecordStreamResponseObject, error) {
	p := r.Params
	at := time.Now()
	if p.At != nil {
		at = *p.At
	}
	ev, err := e.recording.EvaluateStream(requestContext(ctx), recording.StreamRef{MediaServerID: p.MediaServerId, Vhost: deref(p.Vhost, ""),
		App: p.App, StreamID: p.StreamId}, at)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.AutoRecordStreamEvaluation](ev)
	if err != nil {
		return nil, err
	}
	return contract.EvaluateAutoRecordStream200JSONResponse(out), nil
}

func (e *recordingEndpoints) ListRecordingFiles(ctx context.Context, r contract.ListRecordingFilesRequestObject) (contract.ListRecordingFilesResponseObject, error) {
	p := r.Params
	f := recording.FileFilter{MediaServerID: deref(p.MediaServerId, ""), NodeID: deref(p.NodeId, ""), ChannelID: deref(p.ChannelId, ""),
		App: deref(p.App, ""), StreamID: deref(p.StreamId, ""), SourceHook: deref(p.SourceHook, ""), IndexSource: deref(p.IndexSource, ""),
		Start: p.StartTime, End: p.EndTime, Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 20))}
	if p.FileState != nil {
		f.FileState = string(*p.FileState)
	}
	if p.RecordDate != nil {
		f.RecordDate = p.RecordDate.Format("2006-01-02")
	}
	out, err := e.files(ctx, f)
	return contract.ListRecordingFiles200JSONResponse(out), err
}

func (e *recordingEndpoints) ListThirdPartyRecordings(
	ctx context.Context, r contract.ListThirdPartyRecordingsRequestObject,
) (contract.ListThirdPartyRecordingsResponseObject, error) {
	p := r.Params
	f := recording.FileFilter{MediaServerID: deref(p.MediaServerId, ""), NodeID: deref(p.NodeId, ""), ChannelID: deref(p.ChannelId, ""),
		App: deref(p.App, ""), StreamID: deref(p.StreamId, ""), Start: p.StartTime, End: p.EndTime, Page: int(deref(p.Page, 1)),
		PageSize: int(deref(p.PageSize, 20))}
	if p.FileState != nil {
		f.FileState = string(*p.FileState)
	}
	out, err := e.files(ctx, f)
	return contract.ListThirdPartyRecordings200JSONResponse(out), err
}

func (e *recordingEndpoints) files(ctx context.Context, f recording.FileFilter) (contract.RecordingFileList, error) {
	rows, total, err := e.recording.Files(requestContext(ctx), f)
	if err != nil {
		return contract.RecordingFileList{}, err
	}
	out := contract.RecordingFileList{Page: int32(max(f.Page, 1)), PageSize: int32(pageSizeOf(f.PageSize)), Total: total, Rows: []contract.RecordingFile{}}
	for _, row := range rows {
		c, err := convert[contract.RecordingFile](row)
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, c)
	}
	return out, nil
}

func (e *recordingEndpoints) GetEngineRecordingStatus(
	ctx context.Context, r contract.GetEngineRecordingStatusRequestObject,
) (contract.GetEngineRecordingStatusResponseObject, error) {
	ms, recs, vol, err := e.recording.EngineStatus(requestContext(ctx), r.NodeId, deref(r.Params.App, ""), deref(r.Params.StreamId, ""))
	if err != nil {
		return nil, err
	}
	out := contract.GetEngineRecordingStatus200JSONResponse{NodeId: r.NodeId, MediaServerId: ms, CheckedAt: time.Now().UTC(),
		Recordings: []contract.EngineRecordingEntry{}}
	if vol != nil {
		v, err := convert[contract.RecordingVolume](vol)
		if err != nil {
			return nil, err
		}
		out.Volume = &v
	}
	for _, rec := range recs {
		c, err := convert[contract.EngineRecordingEntry](rec)
		if err != nil {
			return nil, err
		}
		out.Recordings = append(out.Recordings, c)
	}
	return out, nil
}

func (e *recordingEndpoints) GetRecordingFileStatistics(
	ctx context.Context, r contract.GetRecordingFileStatisticsRequestObject,
) (contract.GetRecordingFileStatisticsResponseObject, error) {
	st, err := e.recording.Statistics(requestContext(ctx), deref(r.Params.ChannelId, ""))
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordingFileStatistics](st)
	if err != nil {
		return nil, err
	}
	return contract.GetRecordingFileStatistics200JSONResponse(out), nil
}

func (e *recordingEndpoints) ListRecordingDiskStates(
	ctx context.Context, _ contract.ListRecordingDiskStatesRequestObject,
) (contract.ListRecordingDiskStatesResponseObject, error) {
	states, err := e.recording.DiskStates(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordingDiskStates200JSONResponse{CheckedAt: time.Now().UTC(), Items: []contract.RecordingDiskState{}}
	for _, d := range states {
		c, err := convert[contract.RecordingDiskState](d)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

func (e *recordingEndpoints) ListRecordingDiskIdentities(
	ctx context.Context, _ contract.ListRecordingDiskIdentitiesRequestObject,
) (contract.ListRecordingDiskIdentitiesResponseObject, error) {
	states, err := e.recording.DiskStates(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordingDiskIdentities200JSONResponse{CheckedAt: time.Now().UTC(), Items: []contract.RecordingDiskIdentity{}}
	for _, d := range states {
		c, err := convert[contract.RecordingDiskIdentity](d)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

func (e *recordingEndpoints) ListRecordingDiskRoots(
	ctx context.Context, _ contract.ListRecordingDiskRootsRequestObject,
) (contract.ListRecordingDiskRootsResponseObject, error) {
	states, err := e.recording.DiskStates(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordingDiskRoots200JSONResponse{CheckedAt: time.Now().UTC(), Items: []contract.RecordingDiskRoot{}}
	for _, d := range states {
		c, err := convert[contract.RecordingDiskRoot](d)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

func (e *recordingEndpoints) ProbeRecordingRoot(
	ctx context.Context, r contract.ProbeRecordingRootRequestObject,
) (contract.ProbeRecordingRootResponseObject, error) {
	res, err := e.recording.ProbeRoot(requestContext(ctx), actor(ctx).Actor, r.Body.MediaServerId, r.Body.Path, false)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordRootProbeResult](res)
	if err != nil {
		return nil, err
	}
	return contract.ProbeRecordingRoot200JSONResponse(out), nil
}

func (e *recordingEndpoints) ValidateRecordingRoot(
	ctx context.Context, r contract.ValidateRecordingRootRequestObject,
) (contract.ValidateRecordingRootResponseObject, error) {
	res, err := e.recording.ProbeRoot(requestContext(ctx), actor(ctx).Actor, r.Body.MediaServerId, r.Body.Path, true)
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.RecordRootProbeResult](res)
	if err != nil {
		return nil, err
	}
	return contract.ValidateRecordingRoot200JSONResponse(out), nil
}

func (e *recordingEndpoints) GetRecordingDiskCheckTemplate(
	context.Context, contract.GetRecordingDiskCheckTemplateRequestObject,
) (contract.GetRecordingDiskCheckTemplateResponseObject, error) {
	out, err := convert[contract.RecordingDiskCheckTemplate](map[string]any{"items": recording.DiskCheckItems})
	if err != nil {
		return nil, err
	}
	return contract.GetRecordingDiskCheckTemplate200JSONResponse(out), nil
}

func (e *recordingEndpoints) CheckRecordingDisks(
	ctx context.Context, _ contract.CheckRecordingDisksRequestObject,
) (contract.CheckRecordingDisksResponseObject, error) {
	checks, err := e.recording.CheckDisks(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.CheckRecordingDisks200JSONResponse{CheckedAt: time.Now().UTC(), Items: []contract.RecordingDiskCheck{}}
	for _, c := range checks {
		v, err := convert[contract.RecordingDiskCheck](c)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, v)
	}
	return out, nil
}

func (e *recordingEndpoints) GuardRecordingDisks(
	ctx context.Context, _ contract.GuardRecordingDisksRequestObject,
) (contract.GuardRecordingDisksResponseObject, error) {
	guards, err := e.recording.GuardDisks(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.GuardRecordingDisks200JSONResponse{CheckedAt: time.Now().UTC(), Items: []contract.RecordingDiskGuard{}}
	for _, g := range guards {
		v, err := convert[contract.RecordingDiskGuard](g)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, v)
	}
	return out, nil
}
