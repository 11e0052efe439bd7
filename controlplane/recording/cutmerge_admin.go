package recording

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// The cut/merge administration of module 06: counts per state, the
// backlog of a media server, and the cleanup of ended tasks.

// TaskCounts counts a media server's tasks per state.
type TaskCounts struct {
	MediaServerID string `json:"mediaServerId"`
	Pending       int64  `json:"pending"`
	Running       int64  `json:"running"`
	Succeeded     int64  `json:"succeeded"`
	Failed        int64  `json:"failed"`
	// OldestWaitingAt is the creation time of the oldest Pending or
	// Running task.
	OldestWaitingAt *time.Time `json:"oldestWaitingAt,omitempty"`
}

// CountTasks counts a media server's tasks per state.
func (s *Service) CountTasks(ctx context.Context, mediaServerID string) (*TaskCounts, error) {
	out := &TaskCounts{MediaServerID: mediaServerID}
	for st, n := range map[string]*int64{TaskPending: &out.Pending, TaskRunning: &out.Running, TaskSucceeded: &out.Succeeded, TaskFailed: &out.Failed} {
		_, total, err := s.CutMergeTasks(ctx, TaskFilter{MediaServerID: mediaServerID, TaskStatus: st, PageSize: 1})
		if err != nil {
			return nil, err
		}
		*n = total
	}
	oldest, err := query.All(ctx, s.Reader, query.Query{Index: TaskIndex.Name, Limit: 1, Order: []query.Order{query.Asc("created_at_ms")},
		Where: []query.Cond{query.Eq("media_server_id", mediaServerID), query.In("task_status", TaskPending, TaskRunning)}}, query.JSON[CutMergeTask])
	if err != nil {
		return nil, err
	}
	if len(oldest) == 1 {
		out.OldestWaitingAt = &oldest[0].CreatedAt
	}
	return out, nil
}

// CleanupRequest removes ended tasks that completed before now minus
// OlderThan, optionally on one media server, with their outputs unless
// KeepOutputs.
type CleanupRequest struct {
	MediaServerID string
	OlderThan     time.Duration
	KeepOutputs   bool
}

// CleanupResult lists what a cleanup removed and what it could not.
type CleanupResult struct {
	Deleted []string         `json:"deleted"`
	Failed  []CleanupFailure `json:"failed"`
}

// CleanupFailure is a task a cleanup could not remove, and why.
type CleanupFailure struct {
	TaskID  string `json:"taskId"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// maxCleanup bounds one cleanup; a caller repeats it for more.
const maxCleanup = 500

// CleanupCutMerge removes ended tasks older than asked (at most 500 per
// call, oldest first).
func (s *Service) CleanupCutMerge(ctx context.Context, actor Actor, req CleanupRequest) (*CleanupResult, error) {
	if req.OlderThan < 0 {
		return nil, fmt.Errorf("%w: olderThanHours must not be negative", ErrInvalid)
	}
	cutoff := s.now().Add(-req.OlderThan)
	where := query.Where{query.In("task_status", TaskSucceeded, TaskFailed), query.Lt("created_at_ms", cutoff.UnixMilli())}
	where.EqIfSet("media_server_id", req.MediaServerID)
	tasks, err := query.All(ctx, s.Reader, query.Query{Index: TaskIndex.Name, Where: where, Limit: maxCleanup,
		Order: []query.Order{query.Asc("created_at_ms")}}, query.JSON[CutMergeTask])
	if err != nil {
		return nil, err
	}
	out := &CleanupResult{Deleted: []string{}, Failed: []CleanupFailure{}}
	for _, t := range tasks {
		if t.CompletedAt != nil && t.CompletedAt.After(cutoff) {
			continue
		}
		if _, err := s.DeleteCutMerge(ctx, actor, t.TaskID, !req.KeepOutputs); err != nil {
			code := "internal"
			switch {
			case errors.Is(err, ErrEngine):
				code = CodeEngine
			case errors.Is(err, ErrTaskNotFound):
				code = CodeNotFound
			case errors.Is(err, ErrContended), errors.Is(err, ErrTaskBusy):
				code = "conflict"
			}
			out.Failed = append(out.Failed, CleanupFailure{TaskID: t.TaskID, Code: code, Message: err.Error()})
			continue
		}
		out.Deleted = append(out.Deleted, t.TaskID)
	}
	return out, nil
}
