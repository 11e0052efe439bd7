package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/agentapi"
)

// Poster sends one request to the control plane's agent port.
type Poster interface {
	Post(ctx context.Context, path string, v, out any) error
}

// Handler runs one command type; its result is marshalled as the command's
// result. A failure is returned as *Error to carry a code.
type Handler func(ctx context.Context, payload json.RawMessage) (any, error)

// Error is a command failure with one of agentapi's codes.
type Error struct{ Code, Message string }

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds a command failure.
func Errorf(code, format string, a ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Executor polls the node's commands and runs them.
type Executor struct {
	Client   Poster
	Journal  *Journal
	Handlers map[string]Handler
	Log      *zap.Logger
	// MaxParallel bounds the commands running at once.
	MaxParallel int
	// AckAfter is how long a command runs before it is acknowledged as
	// Running; quicker ones report their result only.
	AckAfter time.Duration
	// PollWait is how long one long poll waits on the control plane.
	PollWait time.Duration
	// Retired reports whether an error means the node was retired, which
	// ends Run.
	Retired func(error) bool
	// Conflict reports an answer meaning the command is no longer ours.
	Conflict func(error) bool

	wg sync.WaitGroup
}

func (x *Executor) defaults() {
	if x.MaxParallel <= 0 {
		x.MaxParallel = 32
	}
	if x.AckAfter <= 0 {
		x.AckAfter = 200 * time.Millisecond
	}
	if x.PollWait <= 0 {
		x.PollWait = 25 * time.Second
	}
}

// Run polls until ctx ends (or the node is retired), then waits for the
// running commands.
func (x *Executor) Run(ctx context.Context) error {
	x.defaults()
	defer x.wg.Wait()
	sem := make(chan struct{}, x.MaxParallel)
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		// Take a slot before polling so the agent never claims more than it
		// can start.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		free := 1 + (cap(sem) - len(sem))
		<-sem
		var resp agentapi.PollResponse
		err := x.Client.Post(ctx, agentapi.PathPoll, agentapi.PollRequest{WaitMillis: int(x.PollWait / time.Millisecond), Max: min(free, 16)}, &resp)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if x.Retired != nil && x.Retired(err) {
				return err
			}
			x.Log.Warn("polling node commands failed; retrying", zap.Error(err), zap.Duration("in", backoff))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		backoff = 200 * time.Millisecond
		for _, cmd := range resp.Commands {
			sem <- struct{}{}
			x.wg.Add(1)
			go func(cmd agentapi.Command) {
				defer x.wg.Done()
				defer func() { <-sem }()
				x.Handle(ctx, cmd)
			}(cmd)
		}
	}
	return nil
}

// Handle runs one delivered command once: a key the journal finished is
// answered from memory; a key that was running when the agent died is run
// again only when its type is safe to repeat.
func (x *Executor) Handle(ctx context.Context, cmd agentapi.Command) {
	x.defaults()
	key := cmd.IdempotencyKey
	if key == "" {
		key = cmd.CommandID
	}
	safe := agentapi.CommandTypes[cmd.Type]
	if e, seen := x.Journal.Get(key); seen {
		if e.FinishedAt != nil && e.Result != nil {
			res := *e.Result
			res.CommandID, res.Attempt, res.Replayed = cmd.CommandID, cmd.Attempt, true
			x.Log.Info("node command delivered again; answering from the journal", zap.String("command", cmd.CommandID), zap.String("type", cmd.Type))
			x.report(ctx, res)
			return
		}
		if !safe {
			now := time.Now().UTC()
			res := agentapi.CommandResult{CommandID: cmd.CommandID, Attempt: cmd.Attempt, StartedAt: e.StartedAt, FinishedAt: now,
				Error: &agentapi.Error{Code: agentapi.CodeInterrupted, Message: "the agent stopped while running this command; its outcome is unknown and it is not run again"}}
			if err := x.Journal.Finish(key, res, true); err != nil {
				x.Log.Error("journal write failed", zap.Error(err))
			}
			x.report(ctx, res)
			return
		}
	}
	if err := x.Journal.Begin(key, cmd.CommandID, cmd.Type, !safe); err != nil {
		// Without the journal a re-delivery could run it twice: refuse.
		x.Log.Error("journal write failed; not running the command", zap.Error(err))
		return
	}
	started := time.Now().UTC()
	runCtx, cancel := context.WithCancel(ctx)
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		x.acknowledge(runCtx, cmd, started, cancel)
	}()
	out, err := x.run(runCtx, cmd)
	cancel()
	<-acked
	res := agentapi.CommandResult{CommandID: cmd.CommandID, Attempt: cmd.Attempt, StartedAt: started, FinishedAt: time.Now().UTC(), Succeeded: err == nil}
	if out != nil {
		raw, merr := json.Marshal(out)
		if merr == nil {
			res.Result = raw
		} else if err == nil {
			err = merr
			res.Succeeded = false
		}
	}
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			ce = &Error{Code: agentapi.CodeInternal, Message: err.Error()}
		}
		res.Error = &agentapi.Error{Code: ce.Code, Message: ce.Message}
	}
	if err := x.Journal.Finish(key, res, !safe); err != nil {
		x.Log.Error("journal write failed", zap.Error(err))
	}
	x.report(ctx, res)
}

func (x *Executor) run(ctx context.Context, cmd agentapi.Command) (out any, err error) {
	h, ok := x.Handlers[cmd.Type]
	if !ok {
		return nil, Errorf(agentapi.CodeInvalid, "this agent does not run %q commands", cmd.Type)
	}
	defer func() {
		if r := recover(); r != nil {
			x.Log.Error("node command panicked", zap.String("type", cmd.Type), zap.Any("panic", r), zap.Stack("stack"))
			out, err = nil, Errorf(agentapi.CodeInternal, "the agent failed while running the command")
		}
	}()
	x.Log.Info("running node command", zap.String("command", cmd.CommandID), zap.String("type", cmd.Type), zap.Int("attempt", cmd.Attempt))
	return h(context.WithValue(ctx, commandKey{}, cmd), cmd.Payload)
}

type commandKey struct{}

// Running is the command a handler runs for (from its context): a handler
// that needs the command's sealed secret asks for it by id and attempt.
func Running(ctx context.Context) (agentapi.Command, bool) {
	cmd, ok := ctx.Value(commandKey{}).(agentapi.Command)
	return cmd, ok
}

// acknowledge marks a command Running once it has run for AckAfter and
// keeps its delivery deadline ahead while it runs; a cancellation from the
// control plane cancels the work.
func (x *Executor) acknowledge(ctx context.Context, cmd agentapi.Command, started time.Time, cancel context.CancelFunc) {
	wait := x.AckAfter
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var resp agentapi.CommandRunningResponse
		err := x.Client.Post(ctx, agentapi.PathCommandRunning, agentapi.CommandRunning{CommandID: cmd.CommandID, Attempt: cmd.Attempt, StartedAt: started}, &resp)
		switch {
		case err == nil && resp.Canceled:
			x.Log.Info("node command canceled by the control plane", zap.String("command", cmd.CommandID))
			cancel()
			return
		case err == nil:
			wait = max(time.Until(resp.VisibleUntil)/3, 100*time.Millisecond)
		case x.Conflict != nil && x.Conflict(err):
			cancel()
			return
		default:
			wait = time.Second
		}
	}
}

// report delivers a result until the control plane takes it or says the
// command is no longer ours.
func (x *Executor) report(ctx context.Context, res agentapi.CommandResult) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := x.Client.Post(ctx, agentapi.PathCommandResult, res, nil)
		if err == nil {
			return
		}
		if x.Conflict != nil && x.Conflict(err) {
			x.Log.Info("node command result not taken", zap.String("command", res.CommandID), zap.Error(err))
			return
		}
		if x.Retired != nil && x.Retired(err) {
			return
		}
		x.Log.Warn("reporting a node command result failed; retrying", zap.String("command", res.CommandID), zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
