// Package tasks is the registry of a control node's built-in tasks: what
// each does, whether it runs on its own and where, and its run history.
// It runs them on schedule (Loop) and on an operator's request (RunNow).
// It knows nothing of HTTP.
package tasks

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Errors of a run request, mapped to contract codes at the HTTP boundary.
var (
	ErrUnknownTask  = fault.New(fault.NotFound, "not_found", "unknown task")
	ErrTaskRunning  = fault.New(fault.Conflict, "conflict", "task is already running")
	ErrTaskOnLeader = fault.NewRetryable(fault.Conflict, "conflict", "task runs on the leader only; this node does not lead now")
)

// Task is a built-in background task. Run does the work (for real, or as a
// preview that changes nothing) and returns a summary and details.
type Task struct {
	Name        string
	Description string
	LeaderOnly  bool
	// Interval is how often the task runs on its own; 0 means manual only.
	Interval time.Duration
	Preview  bool
	Run      func(ctx context.Context, preview bool) (summary string, details map[string]string, err error)
}

type taskState struct {
	Task
	running    bool
	lastRunAt  *time.Time
	lastDur    time.Duration
	lastResult string
	lastErr    string
	runs       int64
}

// Registry holds the built-in tasks of this node.
type Registry struct {
	mu     sync.Mutex
	tasks  map[string]*taskState
	log    *zap.Logger
	leader func() bool
}

// New makes an empty registry; leader reports whether this node may run
// leader-only tasks.
func New(log *zap.Logger, leader func() bool) *Registry {
	return &Registry{tasks: map[string]*taskState{}, log: log, leader: leader}
}

// Register adds a task.
func (t *Registry) Register(task Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tasks[task.Name] = &taskState{Task: task}
}

// RunResult is the outcome of one run. A failed run is a result (not an
// error) whose Summary is the failure.
type RunResult struct {
	TaskName   string
	Preview    bool
	StartedAt  time.Time
	FinishedAt time.Time
	Succeeded  bool
	Summary    string
	Details    map[string]string
}

// RunNow runs a task once, refusing a second concurrent run.
func (t *Registry) RunNow(ctx context.Context, name string, preview bool) (RunResult, error) {
	t.mu.Lock()
	st, ok := t.tasks[name]
	if !ok {
		t.mu.Unlock()
		return RunResult{}, fmt.Errorf("%w: %q", ErrUnknownTask, name)
	}
	if preview && !st.Preview {
		t.mu.Unlock()
		return RunResult{}, fmt.Errorf("%w: task %q has no preview", ErrUnknownTask, name)
	}
	if st.running {
		t.mu.Unlock()
		return RunResult{}, fmt.Errorf("%w: %q", ErrTaskRunning, name)
	}
	// The leader runs its own tasks on schedule: a run here, on a node
	// that does not lead, could overlap one there. A preview changes
	// nothing and may run anywhere.
	if st.LeaderOnly && !preview && !t.leader() {
		t.mu.Unlock()
		return RunResult{}, fmt.Errorf("%w: %q", ErrTaskOnLeader, name)
	}
	st.running = true
	t.mu.Unlock()

	start := time.Now().UTC()
	summary, details, err := st.Run(ctx, preview)
	end := time.Now().UTC()
	t.mu.Lock()
	st.running = false
	if !preview {
		st.lastRunAt, st.lastDur, st.lastResult, st.runs = &start, end.Sub(start), summary, st.runs+1
		st.lastErr = ""
		if err != nil {
			st.lastErr = err.Error()
		}
	}
	t.mu.Unlock()
	if details == nil {
		details = map[string]string{}
	}
	res := RunResult{TaskName: name, Preview: preview, StartedAt: start, FinishedAt: end, Succeeded: err == nil, Summary: summary, Details: details}
	if err != nil {
		res.Summary = err.Error()
	}
	return res, nil
}

// Loop runs the periodic tasks until ctx ends; leader-only tasks run only
// while this node is the leader.
func (t *Registry) Loop(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, st := range t.snapshot() {
			if st.Interval == 0 || (st.LeaderOnly && !t.leader()) {
				continue
			}
			if st.lastRunAt != nil && now.Sub(*st.lastRunAt) < st.Interval {
				continue
			}
			if _, err := t.RunNow(ctx, st.Name, false); err != nil {
				t.log.Debug("task not run", zap.String("task", st.Name), zap.Error(err))
			}
		}
	}
}

func (t *Registry) snapshot() []taskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]taskState, 0, len(t.tasks))
	for _, st := range t.tasks {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Status is a task with its run history.
type Status struct {
	Name        string
	Description string
	LeaderOnly  bool
	// Interval is how often the task runs on its own; 0 means manual only.
	Interval time.Duration
	Preview  bool
	// Runnable says whether an operator may run it on this node now (a
	// leader-only task only on the leader).
	Runnable     bool
	Running      bool
	LastRunAt    *time.Time
	LastDuration time.Duration
	LastResult   string
	LastError    string
	Runs         int64
}

// List returns the registered tasks by name with their run history.
func (t *Registry) List() []Status {
	leader := t.leader()
	out := []Status{}
	for _, st := range t.snapshot() {
		out = append(out, Status{
			Name: st.Name, Description: st.Description, LeaderOnly: st.LeaderOnly, Interval: st.Interval, Preview: st.Preview,
			Runnable: !st.LeaderOnly || leader, Running: st.running, LastRunAt: st.lastRunAt, LastDuration: st.lastDur,
			LastResult: st.lastResult, LastError: st.lastErr, Runs: st.runs,
		})
	}
	return out
}
