package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/recording"
)

// Cut/merge tasks of modules 06 and 11: both tags call the same domain
// operations; the output's bytes are read from its engine like a recorded
// file's (recording_media_endpoint.go).

func toTask(t *recording.CutMergeTask) (contract.CutMergeTask, error) {
	out, err := convert[contract.CutMergeTask](t)
	out.SourceFileCount = int32(len(t.Spans))
	return out, err
}

func (e *recordingEndpoints) createTask(ctx context.Context, b *contract.CutMergeRequest) (contract.CutMergeTask, error) {
	req := recording.CutMergeRequest{StreamRef: recording.StreamRef{ChannelID: deref(b.ChannelId, ""), MediaServerID: deref(b.MediaServerId, ""),
		Vhost: deref(b.Vhost, ""), App: deref(b.App, ""), StreamID: deref(b.StreamId, "")}, Start: b.StartTime, End: b.EndTime,
		CallbackURL: deref(b.CallbackUrl, "")}
	t, err := e.recording.CreateCutMerge(requestContext(ctx), actor(ctx).Actor, req)
	if err != nil {
		return contract.CutMergeTask{}, err
	}
	return toTask(t)
}

func (e *recordingEndpoints) listTasks(ctx context.Context, f recording.TaskFilter) (contract.CutMergeTaskList, error) {
	rows, total, err := e.recording.CutMergeTasks(requestContext(ctx), f)
	if err != nil {
		return contract.CutMergeTaskList{}, err
	}
	out := contract.CutMergeTaskList{Page: int32(max(f.Page, 1)), PageSize: int32(f.PageSize), Total: total, Rows: []contract.CutMergeTask{}}
	for i := range rows {
		t, err := toTask(&rows[i])
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, t)
	}
	return out, nil
}

// task reads a task; a mediaServerId that is not the task's answers
// 404 like a task that does not exist.
func (e *recordingEndpoints) task(ctx context.Context, id string, mediaServerID *string) (*recording.CutMergeTask, error) {
	t, err := e.recording.CutMergeTaskByID(requestContext(ctx), id)
	if err != nil {
		return nil, err
	}
	if mediaServerID != nil && *mediaServerID != t.MediaServerID {
		return nil, fmt.Errorf("%w: %q on media server %q", recording.ErrTaskNotFound, id, *mediaServerID)
	}
	return t, nil
}

func statusFilter(s *contract.CutMergeTaskStatus) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

func (e *recordingEndpoints) ListCutMergeTasks(ctx context.Context, r contract.ListCutMergeTasksRequestObject) (contract.ListCutMergeTasksResponseObject, error) {
	p := r.Params
	out, err := e.listTasks(ctx, recording.TaskFilter{MediaServerID: deref(p.MediaServerId, ""), TaskStatus: statusFilter(p.TaskStatus),
		MainID: deref(p.MainId, ""), App: deref(p.App, ""), Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 20))})
	return contract.ListCutMergeTasks200JSONResponse(out), err
}

func (e *recordingEndpoints) ListThirdPartyCutMergeTasks(
	ctx context.Context, r contract.ListThirdPartyCutMergeTasksRequestObject,
) (contract.ListThirdPartyCutMergeTasksResponseObject, error) {
	p := r.Params
	out, err := e.listTasks(ctx, recording.TaskFilter{MediaServerID: deref(p.MediaServerId, ""), TaskStatus: statusFilter(p.TaskStatus),
		MainID: deref(p.MainId, ""), Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 20))})
	return contract.ListThirdPartyCutMergeTasks200JSONResponse(out), err
}

func (e *recordingEndpoints) CreateCutMergeTask(ctx context.Context, r contract.CreateCutMergeTaskRequestObject) (contract.CreateCutMergeTaskResponseObject, error) {
	out, err := e.createTask(ctx, r.Body)
	if err != nil {
		return nil, err
	}
	return contract.CreateCutMergeTask200JSONResponse(out), nil
}

func (e *recordingEndpoints) CreateThirdPartyCutMergeTask(
	ctx context.Context, r contract.CreateThirdPartyCutMergeTaskRequestObject,
) (contract.CreateThirdPartyCutMergeTaskResponseObject, error) {
	out, err := e.createTask(ctx, r.Body)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyCutMergeTask200JSONResponse(out), nil
}

func (e *recordingEndpoints) GetCutMergeTask(ctx context.Context, r contract.GetCutMergeTaskRequestObject) (contract.GetCutMergeTaskResponseObject, error) {
	t, err := e.task(ctx, r.TaskId, &r.Params.MediaServerId)
	if err != nil {
		return nil, err
	}
	out, err := toTask(t)
	return contract.GetCutMergeTask200JSONResponse(out), err
}

func (e *recordingEndpoints) GetThirdPartyCutMergeTask(
	ctx context.Context, r contract.GetThirdPartyCutMergeTaskRequestObject,
) (contract.GetThirdPartyCutMergeTaskResponseObject, error) {
	t, err := e.task(ctx, r.TaskId, nil)
	if err != nil {
		return nil, err
	}
	out, err := toTask(t)
	return contract.GetThirdPartyCutMergeTask200JSONResponse(out), err
}

func (e *recordingEndpoints) GetCutMergeTaskDetail(
	ctx context.Context, r contract.GetCutMergeTaskDetailRequestObject,
) (contract.GetCutMergeTaskDetailResponseObject, error) {
	t, err := e.task(ctx, r.TaskId, r.Params.MediaServerId)
	if err != nil {
		return nil, err
	}
	task, err := toTask(t)
	if err != nil {
		return nil, err
	}
	out := contract.CutMergeTaskDetail{Task: task}
	if out.Sources, err = convert[[]struct {
		FileId string `json:"fileId"`
		FromMs int64  `json:"fromMs"`
		ToMs   *int64 `json:"toMs,omitempty"`
	}](t.Spans); err != nil {
		return nil, err
	}
	return contract.GetCutMergeTaskDetail200JSONResponse(out), nil
}

func (e *recordingEndpoints) deleteTask(ctx context.Context, id string, deleteOutput *bool) (contract.CutMergeTask, error) {
	t, err := e.recording.DeleteCutMerge(requestContext(ctx), actor(ctx).Actor, id, deref(deleteOutput, false))
	if err != nil {
		return contract.CutMergeTask{}, err
	}
	return toTask(t)
}

func (e *recordingEndpoints) DeleteCutMergeTask(ctx context.Context, r contract.DeleteCutMergeTaskRequestObject) (contract.DeleteCutMergeTaskResponseObject, error) {
	out, err := e.deleteTask(ctx, r.TaskId, r.Params.DeleteOutputFile)
	if err != nil {
		return nil, err
	}
	return contract.DeleteCutMergeTask200JSONResponse(out), nil
}

func (e *recordingEndpoints) DeleteThirdPartyCutMergeTask(
	ctx context.Context, r contract.DeleteThirdPartyCutMergeTaskRequestObject,
) (contract.DeleteThirdPartyCutMergeTaskResponseObject, error) {
	out, err := e.deleteTask(ctx, r.TaskId, r.Params.DeleteOutputFile)
	if err != nil {
		return nil, err
	}
	return contract.DeleteThirdPartyCutMergeTask200JSONResponse(out), nil
}

func (e *recordingEndpoints) GetCutMergeTaskMedia(ctx context.Context, r contract.GetCutMergeTaskMediaRequestObject) (contract.GetCutMergeTaskMediaResponseObject, error) {
	u, err := e.recording.OutputURL(requestContext(ctx), r.TaskId, playback.ActionPlay)
	if err != nil {
		return nil, err
	}
	f, err := readEngine(ctx, u, "cut_merge_output_unavailable", "the cut/merge output is not available")
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *recordingEndpoints) DownloadCutMergeTaskOutput(
	ctx context.Context, r contract.DownloadCutMergeTaskOutputRequestObject,
) (contract.DownloadCutMergeTaskOutputResponseObject, error) {
	u, err := e.recording.OutputURL(requestContext(ctx), r.TaskId, playback.ActionDownload)
	if err != nil {
		return nil, err
	}
	f, err := readEngine(ctx, u, "cut_merge_output_unavailable", "the cut/merge output is not available")
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *recordingEndpoints) outputLink(ctx context.Context, id, action string, lifetime *int32) (contract.ThirdPartyMediaLink, error) {
	l, err := e.recording.OutputLink(requestContext(ctx), caller(ctx), id, action, intPtr(lifetime))
	if err != nil {
		return contract.ThirdPartyMediaLink{}, err
	}
	return toLink(l), nil
}

func (e *recordingEndpoints) CreateThirdPartyCutMergePlaybackLink(
	ctx context.Context, r contract.CreateThirdPartyCutMergePlaybackLinkRequestObject,
) (contract.CreateThirdPartyCutMergePlaybackLinkResponseObject, error) {
	l, err := e.outputLink(ctx, r.TaskId, playback.ActionPlay, r.Body.LifetimeSeconds)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyCutMergePlaybackLink200JSONResponse(l), nil
}

func (e *recordingEndpoints) CreateThirdPartyCutMergeDownloadLink(
	ctx context.Context, r contract.CreateThirdPartyCutMergeDownloadLinkRequestObject,
) (contract.CreateThirdPartyCutMergeDownloadLinkResponseObject, error) {
	l, err := e.outputLink(ctx, r.TaskId, playback.ActionDownload, r.Body.LifetimeSeconds)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyCutMergeDownloadLink200JSONResponse(l), nil
}

func (e *recordingEndpoints) CreateThirdPartyCutMergePlaybackLease(
	ctx context.Context, r contract.CreateThirdPartyCutMergePlaybackLeaseRequestObject,
) (contract.CreateThirdPartyCutMergePlaybackLeaseResponseObject, error) {
	l, srcs, err := e.recording.LeaseOutput(requestContext(ctx), caller(ctx), r.TaskId, playback.LeaseRequest{Protocols: protocolNames(r.Body.Protocols),
		LeaseSeconds: intPtr(r.Body.LeaseSeconds), AbsoluteLifetimeSeconds: intPtr(r.Body.AbsoluteLifetimeSeconds)})
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyCutMergePlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func (e *recordingEndpoints) counts(ctx context.Context, mediaServerID string) (contract.CutMergeTaskCounts, error) {
	c, err := e.recording.CountTasks(requestContext(ctx), mediaServerID)
	if err != nil {
		return contract.CutMergeTaskCounts{}, err
	}
	return convert[contract.CutMergeTaskCounts](c)
}

func (e *recordingEndpoints) GetCutMergeTaskStatus(
	ctx context.Context, r contract.GetCutMergeTaskStatusRequestObject,
) (contract.GetCutMergeTaskStatusResponseObject, error) {
	out, err := e.counts(ctx, r.Params.MediaServerId)
	if err != nil {
		return nil, err
	}
	return contract.GetCutMergeTaskStatus200JSONResponse(out), nil
}

func (e *recordingEndpoints) GetCutMergeBacklog(ctx context.Context, r contract.GetCutMergeBacklogRequestObject) (contract.GetCutMergeBacklogResponseObject, error) {
	out, err := e.counts(ctx, r.Params.MediaServerId)
	if err != nil {
		return nil, err
	}
	return contract.GetCutMergeBacklog200JSONResponse(out), nil
}

func (e *recordingEndpoints) CleanupCutMergeTasks(
	ctx context.Context, r contract.CleanupCutMergeTasksRequestObject,
) (contract.CleanupCutMergeTasksResponseObject, error) {
	b := r.Body
	res, err := e.recording.CleanupCutMerge(requestContext(ctx), actor(ctx).Actor, recording.CleanupRequest{MediaServerID: deref(b.MediaServerId, ""),
		OlderThan: time.Duration(deref(b.OlderThanHours, 24)) * time.Hour, KeepOutputs: deref(b.KeepOutputFiles, false)})
	if err != nil {
		return nil, err
	}
	out, err := convert[contract.CutMergeCleanupResult](res)
	if err != nil {
		return nil, err
	}
	return contract.CleanupCutMergeTasks200JSONResponse(out), nil
}
