package commands

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/shared/agentapi"
)

// fakePlane records what the executor posts; its answers come from
// function fields.
type fakePlane struct {
	mu      sync.Mutex
	results []agentapi.CommandResult
	acks    []agentapi.CommandRunning
	running func(agentapi.CommandRunning) agentapi.CommandRunningResponse
}

func (f *fakePlane) Post(_ context.Context, path string, v, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch path {
	case agentapi.PathCommandResult:
		f.results = append(f.results, v.(agentapi.CommandResult))
	case agentapi.PathCommandRunning:
		ack := v.(agentapi.CommandRunning)
		f.acks = append(f.acks, ack)
		resp := agentapi.CommandRunningResponse{VisibleUntil: time.Now().Add(300 * time.Millisecond)}
		if f.running != nil {
			resp = f.running(ack)
		}
		*(out.(*agentapi.CommandRunningResponse)) = resp
	}
	return nil
}

func (f *fakePlane) last() agentapi.CommandResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.results[len(f.results)-1]
}

func newExecutor(t *testing.T, dir string, plane *fakePlane, h map[string]Handler) *Executor {
	j, err := OpenJournal(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &Executor{Client: plane, Journal: j, Handlers: h, Log: zaptest.NewLogger(t), AckAfter: 50 * time.Millisecond}
}

func TestRedeliveredCommandRunsOnce(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	h := map[string]Handler{agentapi.TypeRTPLease: func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]int{"port": 30000}, nil
	}}
	plane := &fakePlane{}
	x := newExecutor(t, dir, plane, h)
	cmd := agentapi.Command{CommandID: "c1", Type: agentapi.TypeRTPLease, IdempotencyKey: "k1", Attempt: 1}
	x.Handle(t.Context(), cmd)
	// The answer was lost; the control plane hands it out again, even to
	// a restarted agent reading the same journal.
	x.Journal.Close()
	x2 := newExecutor(t, dir, plane, h)
	cmd.Attempt = 2
	x2.Handle(t.Context(), cmd)
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	r := plane.last()
	if !r.Succeeded || !r.Replayed || r.Attempt != 2 || string(r.Result) != `{"port":30000}` {
		t.Fatalf("replayed result %+v", r)
	}
}

func TestInterruptedCommands(t *testing.T) {
	cases := []struct {
		name     string
		typ      string
		wantRuns int32
		wantCode string
	}{
		{"unsafe type reported as interrupted", agentapi.TypeEngineConfigApply, 0, agentapi.CodeInterrupted},
		{"safe type runs again", agentapi.TypeEngineStatus, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			j, _ := OpenJournal(filepath.Join(dir, "journal"))
			// The agent died after starting the command.
			j.Begin("k", "c1", c.typ, true)
			j.Close()
			var runs atomic.Int32
			plane := &fakePlane{}
			x := newExecutor(t, dir, plane, map[string]Handler{c.typ: func(context.Context, json.RawMessage) (any, error) { runs.Add(1); return nil, nil }})
			x.Handle(t.Context(), agentapi.Command{CommandID: "c1", Type: c.typ, IdempotencyKey: "k", Attempt: 2})
			r := plane.last()
			if runs.Load() != c.wantRuns || (c.wantCode == "") != r.Succeeded || (r.Error != nil && r.Error.Code != c.wantCode) {
				t.Fatalf("runs %d, result %+v", runs.Load(), r)
			}
		})
	}
}

func TestLongCommandIsAcknowledgedAndCanBeCanceled(t *testing.T) {
	plane := &fakePlane{}
	var acks atomic.Int32
	plane.running = func(agentapi.CommandRunning) agentapi.CommandRunningResponse {
		n := acks.Add(1)
		return agentapi.CommandRunningResponse{VisibleUntil: time.Now().Add(300 * time.Millisecond), Canceled: n >= 3}
	}
	x := newExecutor(t, t.TempDir(), plane, map[string]Handler{agentapi.TypeEngineRestart: func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-ctx.Done():
			return nil, Errorf("canceled", "stopped on request")
		case <-time.After(10 * time.Second):
			return nil, nil
		}
	}})
	start := time.Now()
	x.Handle(t.Context(), agentapi.Command{CommandID: "c1", Type: agentapi.TypeEngineRestart, IdempotencyKey: "k", Attempt: 1})
	if time.Since(start) > 5*time.Second || acks.Load() < 3 {
		t.Fatalf("acks %d after %s", acks.Load(), time.Since(start))
	}
	if r := plane.last(); r.Succeeded || r.Error.Code != "canceled" {
		t.Fatalf("result %+v", r)
	}
}

func TestUnknownTypeAndPanicFail(t *testing.T) {
	plane := &fakePlane{}
	x := newExecutor(t, t.TempDir(), plane, map[string]Handler{agentapi.TypePing: func(context.Context, json.RawMessage) (any, error) { panic("boom") }})
	x.Handle(t.Context(), agentapi.Command{CommandID: "c1", Type: "no.such", IdempotencyKey: "a"})
	if r := plane.last(); r.Error == nil || r.Error.Code != agentapi.CodeInvalid {
		t.Fatalf("unknown type: %+v", r)
	}
	x.Handle(t.Context(), agentapi.Command{CommandID: "c2", Type: agentapi.TypePing, IdempotencyKey: "b"})
	if r := plane.last(); r.Error == nil || r.Error.Code != agentapi.CodeInternal {
		t.Fatalf("panic: %+v", r)
	}
}

func TestJournalSurvivesATornLine(t *testing.T) {
	dir := t.TempDir()
	j, _ := OpenJournal(filepath.Join(dir, "journal"))
	j.Begin("k1", "c1", agentapi.TypePing, true)
	j.Finish("k1", agentapi.CommandResult{CommandID: "c1", Succeeded: true}, true)
	j.f.Write([]byte(`{"key":"k2","comm`))
	j.Close()
	j2, err := OpenJournal(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if e, ok := j2.Get("k1"); !ok || e.Result == nil || !e.Result.Succeeded {
		t.Fatalf("k1 lost: %+v", e)
	}
	if _, ok := j2.Get("k2"); ok {
		t.Fatal("torn line read as an entry")
	}
}
