package system

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/api/contract"
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

// Tasks is the registry of built-in tasks of this node.
type Tasks struct {
	mu     sync.Mutex
	tasks  map[string]*taskState
	log    *zap.Logger
	leader func() bool
}

// NewTasks makes an empty registry; leader reports whether this node may
// run leader-only tasks.
func NewTasks(log *zap.Logger, leader func() bool) *Tasks {
	return &Tasks{tasks: map[string]*taskState{}, log: log, leader: leader}
}

// Register adds a task.
func (t *Tasks) Register(task Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tasks[task.Name] = &taskState{Task: task}
}

// RunNow runs a task once, refusing a second concurrent run.
func (t *Tasks) RunNow(ctx context.Context, name string, preview bool) (contract.SystemTaskRunResult, error) {
	t.mu.Lock()
	st, ok := t.tasks[name]
	if !ok {
		t.mu.Unlock()
		return contract.SystemTaskRunResult{}, fmt.Errorf("%w: %q", ErrUnknownTask, name)
	}
	if preview && !st.Preview {
		t.mu.Unlock()
		return contract.SystemTaskRunResult{}, fmt.Errorf("%w: task %q has no preview", ErrUnknownTask, name)
	}
	if st.running {
		t.mu.Unlock()
		return contract.SystemTaskRunResult{}, fmt.Errorf("%w: %q", ErrTaskRunning, name)
	}
	// The leader runs its own tasks on schedule: a run here, on a node
	// that does not lead, could overlap one there. A preview changes
	// nothing and may run anywhere.
	if st.LeaderOnly && !preview && !t.leader() {
		t.mu.Unlock()
		return contract.SystemTaskRunResult{}, fmt.Errorf("%w: %q", ErrTaskOnLeader, name)
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
	res := contract.SystemTaskRunResult{TaskName: name, Preview: preview, StartedAt: start, FinishedAt: end, Succeeded: err == nil, Summary: summary, Details: details}
	if err != nil {
		res.Summary = err.Error()
	}
	return res, nil
}

// Loop runs the periodic tasks until ctx ends; leader-only tasks run only
// while this node is the leader.
func (t *Tasks) Loop(ctx context.Context) {
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

func (t *Tasks) snapshot() []taskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]taskState, 0, len(t.tasks))
	for _, st := range t.tasks {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// BackgroundTasks lists the registered tasks with their run history.
func (s *Service) BackgroundTasks() contract.BackgroundTaskList {
	out := contract.BackgroundTaskList{NodeId: s.d.NodeID, Rows: []contract.BackgroundTask{}}
	for _, st := range s.d.Tasks.snapshot() {
		out.Rows = append(out.Rows, contract.BackgroundTask{
			Name: st.Name, Description: st.Description, LeaderOnly: st.LeaderOnly, Running: st.running,
			IntervalSeconds: int32(st.Interval.Seconds()), LastRunAt: st.lastRunAt,
			LastDurationMs: st.lastDur.Milliseconds(), LastError: st.lastErr, RunCount: st.runs,
		})
	}
	return out
}

// SystemTasks lists the tasks an operator can run.
func (s *Service) SystemTasks() contract.SystemTaskList {
	out := contract.SystemTaskList{Rows: []contract.SystemTask{}}
	leader := s.d.Tasks.leader()
	for _, st := range s.d.Tasks.snapshot() {
		out.Rows = append(out.Rows, contract.SystemTask{
			TaskName: st.Name, Description: st.Description, Runnable: !st.LeaderOnly || leader,
			SupportsPreview: st.Preview, LeaderOnly: st.LeaderOnly, Running: st.running,
			LastRunAt: st.lastRunAt, LastResult: st.lastResult, LastError: st.lastErr,
		})
	}
	return out
}

// RunTask runs a task on operator request.
func (s *Service) RunTask(ctx context.Context, name string, preview bool) (contract.SystemTaskRunResult, error) {
	return s.d.Tasks.RunNow(ctx, name, preview)
}
