package tasks

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/test/testkit"
)

// TestTaskRuns: an unknown task, a preview of a task without one, a second
// concurrent run and a leader-only run on a node that does not lead are
// refused; a preview leaves no history, a run does, and a failed run
// reports its error as the summary.
func TestTaskRuns(t *testing.T) {
	var leading atomic.Bool
	tasks := New(zaptest.NewLogger(t), leading.Load)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	tasks.Register(Task{Name: "slow", Preview: true, Run: func(_ context.Context, preview bool) (string, map[string]string, error) {
		if !preview {
			started <- struct{}{}
			<-release
		}
		return "done", nil, nil
	}})
	tasks.Register(Task{Name: "leader", LeaderOnly: true, Run: func(context.Context, bool) (string, map[string]string, error) {
		return "", nil, errors.New("disk on fire")
	}})
	ctx := context.Background()
	if _, err := tasks.RunNow(ctx, "none", false); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := tasks.RunNow(ctx, "leader", true); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("preview of a task without one: %v", err)
	}
	if _, err := tasks.RunNow(ctx, "leader", false); !errors.Is(err, ErrTaskOnLeader) {
		t.Fatalf("leader-only task on a follower: %v", err)
	}
	res, err := tasks.RunNow(ctx, "slow", true)
	if err != nil || !res.Preview || !res.Succeeded || res.Summary != "done" {
		t.Fatalf("preview: %+v %v", res, err)
	}
	if st := tasks.snapshot()[1]; st.Name != "slow" || st.runs != 0 || st.lastRunAt != nil {
		t.Fatalf("a preview left history: %+v", st)
	}
	done := make(chan error, 1)
	go func() { _, err := tasks.RunNow(ctx, "slow", false); done <- err }()
	<-started
	if _, err := tasks.RunNow(ctx, "slow", false); !errors.Is(err, ErrTaskRunning) {
		t.Fatalf("second concurrent run: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := tasks.snapshot()[1]; st.runs != 1 || st.lastRunAt == nil || st.lastResult != "done" {
		t.Fatalf("after a run: %+v", st)
	}
	leading.Store(true)
	res, err = tasks.RunNow(ctx, "leader", false)
	if err != nil || res.Succeeded || res.Summary != "disk on fire" {
		t.Fatalf("a failed run: %+v %v", res, err)
	}
	if st := tasks.snapshot()[0]; st.lastErr != "disk on fire" || st.runs != 1 {
		t.Fatalf("a failed run's history: %+v", st)
	}
}

// TestTaskLoop: the loop runs each periodic task at its interval, a
// leader-only one only while the node leads, and a manual one never.
func TestTaskLoop(t *testing.T) {
	var leading atomic.Bool
	var everywhere, onLeader, manual atomic.Int32
	count := func(n *atomic.Int32) func(context.Context, bool) (string, map[string]string, error) {
		return func(context.Context, bool) (string, map[string]string, error) { n.Add(1); return "", nil, nil }
	}
	tasks := New(zaptest.NewLogger(t), leading.Load)
	tasks.Register(Task{Name: "everywhere", Interval: time.Second, Run: count(&everywhere)})
	tasks.Register(Task{Name: "on-leader", LeaderOnly: true, Interval: time.Second, Run: count(&onLeader)})
	tasks.Register(Task{Name: "manual", Run: count(&manual)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tasks.Loop(ctx) }()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 10*time.Second, "two runs of the periodic task", func() bool { return everywhere.Load() >= 2 })
	if onLeader.Load() != 0 {
		t.Fatal("a leader-only task ran on a follower")
	}
	leading.Store(true)
	testkit.Eventually(t, 10*time.Second, "the leader-only task on the leader", func() bool { return onLeader.Load() >= 1 })
	if manual.Load() != 0 {
		t.Fatal("a manual task ran on its own")
	}
}
