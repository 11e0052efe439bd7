package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// cutMergeActor names the worker in node commands.
var cutMergeActor = audit.Actor{Type: "system", ID: "cut-merge"}

// Worker limits: a task whose media server cannot be asked is tried this
// many times; a callback this many times; an engine gets this long to
// write an output (a byte copy: an hour of 2 Mbit/s in seconds).
const (
	maxTaskAttempts     = 5
	maxCallbackAttempts = 5
	cutMergeWait        = 15 * time.Minute
)

// CutMergeWorker runs on the leader: it runs Pending tasks (and Running
// ones a previous leader left; the engine's cut/merge rewrites the same
// output, so running one again is safe) one at a time, and delivers the
// callbacks of ended tasks.
type CutMergeWorker struct {
	Recording *Service
	Log       *zap.Logger
	// Interval between passes when nothing wakes the worker (2 s when
	// zero).
	Interval time.Duration
	// Client posts callbacks (the webhooks' guarded dialer in production).
	Client *http.Client
}

// Run works until ctx ends.
func (w *CutMergeWorker) Run(ctx context.Context) {
	every := w.Interval
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.Log.Warn("cut/merge pass failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.Recording.wakeCh():
		}
	}
}

// RunOnce runs the waiting tasks and delivers the pending callbacks.
func (w *CutMergeWorker) RunOnce(ctx context.Context) error {
	s := w.Recording
	tasks, err := query.All(ctx, s.Reader, query.Query{Index: TaskIndex.Name, Limit: 16, Order: []query.Order{query.Asc("created_at_ms")},
		Where: []query.Cond{query.In("task_status", TaskPending, TaskRunning)}}, query.JSON[CutMergeTask])
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if ctx.Err() != nil {
			return nil
		}
		w.run(ctx, t.TaskID)
	}
	pending, err := query.All(ctx, s.Reader, query.Query{Index: TaskIndex.Name, Limit: 16, Order: []query.Order{query.Asc("created_at_ms")},
		Where: []query.Cond{query.Eq("callback_state", CallbackPending)}}, query.JSON[CutMergeTask])
	if err != nil {
		return err
	}
	for _, t := range pending {
		w.callback(ctx, t)
	}
	return nil
}

// run takes one task to its end, or leaves it for the next pass when its
// media server cannot be asked now.
func (w *CutMergeWorker) run(ctx context.Context, id string) {
	s := w.Recording
	now := s.now()
	t, err := s.updateTask(ctx, id, func(t *CutMergeTask) (bool, error) {
		if t.Terminal() {
			return false, nil
		}
		t.TaskStatus, t.Percentage, t.StartedAt = TaskRunning, 10, &now
		t.Attempts++
		return true, nil
	})
	if err != nil || t.Terminal() {
		if err != nil && !errors.Is(err, ErrTaskNotFound) {
			w.Log.Warn("cut/merge task not claimed", zap.String("task", id), zap.Error(err))
		}
		return
	}
	var res engineapi.CutMergeResult
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: t.MediaServerID}, Type: agentapi.TypeEngineRecordCutMerge,
		Payload: engineapi.CutMergeRequest{TaskID: t.TaskID, Spans: t.Spans}, Reason: "cut/merge task " + t.TaskID, Actor: cutMergeActor,
		Wait: cutMergeWait}, &res)
	var ce *mediaserver.CommandError
	done := s.now()
	_, uerr := s.updateTask(ctx, id, func(t *CutMergeTask) (bool, error) {
		if t.Terminal() {
			return false, nil
		}
		if o.Command != nil {
			t.CommandID = o.Command.CommandID
		}
		switch {
		case err == nil && o.Done:
			start := res.StartTime
			t.TaskStatus, t.Percentage, t.FileSize, t.ActualDurationMs, t.Frames, t.Gaps = TaskSucceeded, 100, res.FileSize, res.DurationMs, res.Frames, res.Gaps
			t.OutputStartTime, t.Error = &start, ""
		case err == nil:
			return true, nil // the engine is still writing; the next pass asks again
		case errors.As(err, &ce) || t.Attempts >= maxTaskAttempts:
			t.TaskStatus, t.Error = TaskFailed, err.Error()
		default:
			t.TaskStatus, t.Error = TaskPending, err.Error() // the media server could not be asked; try again
			return true, nil
		}
		t.CompletedAt = &done
		if t.CallbackURL != "" {
			t.CallbackState = CallbackPending
		}
		return true, nil
	})
	if uerr != nil {
		w.Log.Warn("cut/merge outcome not recorded", zap.String("task", id), zap.Error(uerr))
		return
	}
	w.Log.Info("cut/merge task ran", zap.String("task", id), zap.Error(err))
}

// callbackBody is what a callback URL receives; the caller still verifies
// the terminal state by polling (contract B).
type callbackBody struct {
	TaskID           string     `json:"taskId"`
	TaskStatus       string     `json:"taskStatus"`
	Percentage       int        `json:"processPercentage"`
	FileSize         int64      `json:"fileSize,omitempty"`
	ActualDurationMs int64      `json:"actualDurationMs,omitempty"`
	Error            string     `json:"error,omitempty"`
	CompletedAt      *time.Time `json:"completedAt,omitempty"`
}

// callback posts a task's outcome once; a failure is tried again on later
// passes, a few times.
func (w *CutMergeWorker) callback(ctx context.Context, t CutMergeTask) {
	b, err := json.Marshal(callbackBody{TaskID: t.TaskID, TaskStatus: t.TaskStatus, Percentage: t.Percentage, FileSize: t.FileSize,
		ActualDurationMs: t.ActualDurationMs, Error: t.Error, CompletedAt: t.CompletedAt})
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, t.CallbackURL, bytes.NewReader(b))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		client := w.Client
		if client == nil {
			client = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}}
		}
		if resp, err = client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				err = fmt.Errorf("the callback URL answered %s", resp.Status)
			}
		}
	}
	if _, uerr := w.Recording.updateTask(ctx, t.TaskID, func(t *CutMergeTask) (bool, error) {
		if t.CallbackState != CallbackPending {
			return false, nil
		}
		t.CallbackAttempts++
		switch {
		case err == nil:
			t.CallbackState, t.CallbackError = CallbackDelivered, ""
		case t.CallbackAttempts >= maxCallbackAttempts:
			t.CallbackState, t.CallbackError = CallbackFailed, callbackError(err)
		default:
			t.CallbackError = callbackError(err)
		}
		return true, nil
	}); uerr != nil && !errors.Is(uerr, ErrTaskNotFound) {
		w.Log.Warn("cut/merge callback outcome not recorded", zap.String("task", t.TaskID), zap.Error(uerr))
	}
}

// callbackError says why a callback failed without repeating its URL
// (which may carry the caller's own token in its query).
func callbackError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
