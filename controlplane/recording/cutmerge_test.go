package recording

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// scriptedEngine answers node commands as a script says: the engine
// itself is exercised by the recorder's tests and the e2e test; here the
// control plane's side of the task (states, refusals while it runs,
// retries, the callback) is under test.
type scriptedEngine struct {
	calls atomic.Int32
	// answer is called for each cut/merge command.
	answer func(n int, req engineapi.CutMergeRequest, out *engineapi.CutMergeResult) (mediaserver.Outcome, error)
}

func (e *scriptedEngine) Do(_ context.Context, c mediaserver.Call, out any) (mediaserver.Outcome, error) {
	if c.Type != agentapi.TypeEngineRecordCutMerge {
		return mediaserver.Outcome{}, errors.New("unexpected " + c.Type)
	}
	n := int(e.calls.Add(1))
	return e.answer(n, c.Payload.(engineapi.CutMergeRequest), out.(*engineapi.CutMergeResult))
}

// TestCutMergeTaskLifecycle: a range over two adjacent files and, after a
// gap, a third gives one span per file (the first from its middle, the
// last to its middle); bad requests are refused; a media server that
// cannot be asked leaves the task Pending for the next pass; while it
// runs, its output is unavailable and it cannot be deleted; once
// Succeeded the callback is delivered and recorded.
func TestCutMergeTaskLifecycle(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for _, at := range []time.Duration{0, 10 * time.Second, 30 * time.Second} {
		f, _, err := s.FileCompleted(ctx, "media-1", "media-1", report(base.Add(at), 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.FileID)
	}
	got := map[string]any{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { json.NewDecoder(r.Body).Decode(&got) }))
	defer rcv.Close()
	ref := StreamRef{App: "live", StreamID: "cam"}
	for name, req := range map[string]CutMergeRequest{
		"start after end": {StreamRef: ref, Start: base.Add(time.Minute), End: base},
		"no stream":       {Start: base, End: base.Add(time.Minute)},
		"a bad callback":  {StreamRef: ref, Start: base, End: base.Add(time.Minute), CallbackURL: "ftp://example.com/x"},
		"too long":        {StreamRef: ref, Start: base, End: base.Add(8 * 24 * time.Hour)},
	} {
		if _, err := s.CreateCutMerge(ctx, Actor{}, req); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := s.CreateCutMerge(ctx, Actor{}, CutMergeRequest{StreamRef: ref, Start: base.Add(-time.Hour), End: base.Add(-time.Minute)}); !errors.Is(err, ErrNoRecordings) {
		t.Fatalf("a range without recordings: %v", err)
	}
	task, err := s.CreateCutMerge(ctx, Actor{Type: "api-token", ID: "t1"}, CutMergeRequest{StreamRef: ref, Start: base.Add(5 * time.Second),
		End: base.Add(35 * time.Second), CallbackURL: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := []engineapi.CutMergeSpan{{FileID: ids[0], FromMs: 5000}, {FileID: ids[1]}, {FileID: ids[2], ToMs: 5000}}
	if b, _ := json.Marshal(task.Spans); string(b) != string(must(json.Marshal(want))) || task.TaskStatus != TaskPending || task.MediaServerID != "media-1" {
		t.Fatalf("task %+v spans %s", task, b)
	}

	running := make(chan struct{})
	release := make(chan struct{})
	eng := &scriptedEngine{answer: func(n int, req engineapi.CutMergeRequest, out *engineapi.CutMergeResult) (mediaserver.Outcome, error) {
		if n == 1 {
			return mediaserver.Outcome{}, errors.New("agent media-1 is offline")
		}
		close(running)
		<-release
		*out = engineapi.CutMergeResult{TaskID: req.TaskID, FileSize: 12345, DurationMs: 25000, Frames: 1000, StartTime: base}
		return mediaserver.Outcome{Done: true, Command: &nodecommand.Record{CommandID: "c2"}}, nil
	}}
	s.Engines = eng
	w := &CutMergeWorker{Recording: s, Log: zaptest.NewLogger(t)}
	if err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, _ := s.CutMergeTaskByID(ctx, task.TaskID); cur.TaskStatus != TaskPending || cur.Attempts != 1 || cur.Error == "" {
		t.Fatalf("after an unreachable media server: %+v", cur)
	}
	done := make(chan error)
	go func() { done <- w.RunOnce(ctx) }()
	<-running
	if cur, _ := s.CutMergeTaskByID(ctx, task.TaskID); cur.TaskStatus != TaskRunning || cur.Percentage != 10 {
		t.Fatalf("while running: %+v", cur)
	}
	if _, err := s.OutputURL(ctx, task.TaskID, "play"); !errors.Is(err, ErrOutputUnavailable) {
		t.Fatalf("the output of a running task: %v", err)
	}
	if ok, _, _ := s.Playable(ctx, "cut-merge-output", task.TaskID); ok {
		t.Fatal("a running task's output plays")
	}
	if _, err := s.DeleteCutMerge(ctx, Actor{}, task.TaskID, false); !errors.Is(err, ErrTaskBusy) {
		t.Fatalf("delete while running: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cur, _ := s.CutMergeTaskByID(ctx, task.TaskID)
	if cur.TaskStatus != TaskSucceeded || cur.Percentage != 100 || cur.FileSize != 12345 || cur.ActualDurationMs != 25000 || cur.CommandID != "c2" ||
		cur.CallbackState != CallbackDelivered || got["taskStatus"] != TaskSucceeded || got["taskId"] != task.TaskID {
		t.Fatalf("after the run: %+v, callback %v", cur, got)
	}
	if ok, _, _ := s.Playable(ctx, "cut-merge-output", task.TaskID); !ok {
		t.Fatal("a succeeded task's output does not play")
	}
	if n := eng.calls.Load(); n != 2 {
		t.Fatalf("%d engine calls", n)
	}
	// Another pass changes nothing.
	if err := w.RunOnce(ctx); err != nil || eng.calls.Load() != 2 {
		t.Fatalf("a pass after the end: %v, %d calls", err, eng.calls.Load())
	}
	if c, err := s.CountTasks(ctx, "media-1"); err != nil || c.Succeeded != 1 || c.Pending+c.Running+c.Failed != 0 || c.OldestWaitingAt != nil {
		t.Fatalf("counts: %+v %v", c, err)
	}
	// The cleanup leaves tasks younger than asked; then removes it (the
	// output kept, so no media server is asked).
	if res, err := s.CleanupCutMerge(ctx, Actor{}, CleanupRequest{OlderThan: time.Hour}); err != nil || len(res.Deleted) != 0 {
		t.Fatalf("cleanup of older tasks: %+v %v", res, err)
	}
	if res, err := s.CleanupCutMerge(ctx, Actor{}, CleanupRequest{KeepOutputs: true}); err != nil || len(res.Deleted) != 1 || res.Deleted[0] != task.TaskID {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
	if _, err := s.CutMergeTaskByID(ctx, task.TaskID); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("the deleted task: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
