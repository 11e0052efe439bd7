// Package supervisor runs the media engine process for the agent: it
// starts `svc engine --config FILE`, counts it started only once the
// engine's loopback control API answers health with the child's own pid,
// polls health while it runs, restarts it after a crash (at once after a
// run that was stable, with exponential backoff in a crash loop), backs off
// after failed starts instead of storming, and reports every transition
// (started, stopped, crashed, start_failed) in order. One goroutine owns
// the process and its state; the others ask it over a channel.
package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// ErrNotRunning answers a reload when no engine runs.
var ErrNotRunning = errors.New("the engine is not running")

// Managed actions (the transitions' LastAction).
const (
	ActionStart       = "start"
	ActionStop        = "stop"
	ActionRestart     = "restart"
	ActionReload      = "reload"
	ActionAutoRestart = "auto-restart"
	ActionAgentStart  = "agent-start"
)

// Config is how the supervisor runs the engine.
type Config struct {
	// Binary is the svc executable (the agent's own).
	Binary     string
	ConfigPath string
	// DesiredFile remembers an operator's stop across agent restarts.
	DesiredFile string
	// Report receives transitions in order; it must not block.
	Report func(agentapi.EngineTransition)
	// Output receives the engine's stdout and stderr.
	Output io.Writer
	Log    *zap.Logger

	StartTimeout   time.Duration // until health answers (default 10s)
	StopTimeout    time.Duration // SIGTERM to SIGKILL (default 10s)
	HealthInterval time.Duration // while running (default 2s)
	HealthFailures int           // consecutive failures that count as hung (default 3)
	BackoffMin     time.Duration // default 1s
	BackoffMax     time.Duration // default 60s
	StableAfter    time.Duration // a run this long resets the backoff (default 30s)
}

func (c *Config) defaults() {
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = 2 * time.Second
	}
	if c.HealthFailures == 0 {
		c.HealthFailures = 3
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 60 * time.Second
	}
	if c.StableAfter == 0 {
		c.StableAfter = 30 * time.Second
	}
	if c.Output == nil {
		c.Output = os.Stderr
	}
}

// Supervisor owns the engine process.
type Supervisor struct {
	cfg    Config
	bootID string
	reqs   chan request
	exits  chan exit
	http   *http.Client

	mu    sync.RWMutex
	state agentapi.EngineState
	// target is the running engine's control API, for Call.
	target atomic.Pointer[controlTarget]

	// Owned by the Run goroutine.
	seq        int64
	proc       *process
	wantUp     bool
	failing    bool // in a streak of failed starts
	backoff    time.Duration
	restartAt  time.Time
	lastAction string
	healthBad  int
}

type process struct {
	cmd       *exec.Cmd
	pid       int
	startedAt time.Time
	stopping  bool
	control   engineapi.Config
	secret    string
	// stderr keeps the end of what the engine wrote to stderr, so a start
	// that fails says why (the engine prints its fatal error there).
	stderr *lastLine
}

type exit struct {
	pid int
	err error
}

type request struct {
	action string
	reply  chan reply
}

type reply struct {
	state agentapi.EngineState
	err   error
}

// New makes a supervisor; Run starts it.
func New(cfg Config) *Supervisor {
	cfg.defaults()
	boot := uuid.NewString()
	return &Supervisor{cfg: cfg, bootID: boot, reqs: make(chan request), exits: make(chan exit, 4), http: &http.Client{Timeout: 2 * time.Second},
		state: agentapi.EngineState{Status: agentapi.EngineStopped, ConfigPath: cfg.ConfigPath, SupervisorBootID: boot}}
}

// State is the engine as last seen (for heartbeats).
func (s *Supervisor) State() agentapi.EngineState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

func (s *Supervisor) setState(f func(*agentapi.EngineState)) {
	s.mu.Lock()
	f(&s.state)
	s.mu.Unlock()
}

func (s *Supervisor) ask(ctx context.Context, action string) (agentapi.EngineState, error) {
	r := request{action: action, reply: make(chan reply, 1)}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return s.State(), ctx.Err()
	}
	select {
	case rep := <-r.reply:
		return rep.state, rep.err
	case <-ctx.Done():
		return s.State(), ctx.Err()
	}
}

// Start starts the engine if it does not run, and keeps it running.
func (s *Supervisor) Start(ctx context.Context) (agentapi.EngineState, error) {
	return s.ask(ctx, ActionStart)
}

// Stop stops the engine and keeps it stopped, across agent restarts too.
func (s *Supervisor) Stop(ctx context.Context) (agentapi.EngineState, error) {
	return s.ask(ctx, ActionStop)
}

// Restart stops and starts the engine.
func (s *Supervisor) Restart(ctx context.Context) (agentapi.EngineState, error) {
	return s.ask(ctx, ActionRestart)
}

// Reload has the engine re-read its configuration file.
func (s *Supervisor) Reload(ctx context.Context) (agentapi.EngineState, error) {
	return s.ask(ctx, ActionReload)
}

// Status reports the engine, refreshing health first when it runs.
func (s *Supervisor) Status(ctx context.Context) (agentapi.EngineState, error) {
	return s.ask(ctx, "status")
}

// Run owns the engine until ctx ends, then stops it.
func (s *Supervisor) Run(ctx context.Context) {
	s.wantUp = s.readDesired()
	if s.wantUp {
		s.start(ActionAgentStart)
	}
	tick := time.NewTicker(s.cfg.HealthInterval)
	defer tick.Stop()
	for {
		var due <-chan time.Time
		if s.proc == nil && s.wantUp && !s.restartAt.IsZero() {
			due = time.After(time.Until(s.restartAt))
		}
		select {
		case <-ctx.Done():
			if s.proc != nil {
				s.stop(ActionStop, false)
			}
			return
		case r := <-s.reqs:
			st, err := s.handle(r.action)
			r.reply <- reply{st, err}
		case ex := <-s.exits:
			s.exited(ex)
		case <-due:
			s.restartAt = time.Time{}
			s.start(ActionAutoRestart)
		case <-tick.C:
			s.checkHealth()
		}
	}
}

func (s *Supervisor) handle(action string) (agentapi.EngineState, error) {
	switch action {
	case ActionStart:
		s.wantUp = true
		s.writeDesired(true)
		if s.proc == nil {
			s.restartAt = time.Time{}
			s.backoff = 0
			if err := s.start(ActionStart); err != nil {
				return s.State(), err
			}
		}
	case ActionStop:
		s.wantUp = false
		s.writeDesired(false)
		s.restartAt = time.Time{}
		if s.proc != nil {
			s.stop(ActionStop, true)
		} else {
			s.setState(func(st *agentapi.EngineState) { st.Status, st.NextStartAt = agentapi.EngineStopped, nil })
		}
	case ActionRestart:
		s.wantUp = true
		s.writeDesired(true)
		if s.proc != nil {
			s.stop(ActionRestart, true)
		}
		s.restartAt, s.backoff = time.Time{}, 0
		if err := s.start(ActionRestart); err != nil {
			return s.State(), err
		}
	case ActionReload:
		if s.proc == nil {
			return s.State(), ErrNotRunning
		}
		s.lastAction = ActionReload
		s.setState(func(st *agentapi.EngineState) { st.LastAction = ActionReload })
		if err := s.callReload(); err != nil {
			return s.State(), err
		}
	case "status":
		s.checkHealth()
	}
	return s.State(), nil
}

func (s *Supervisor) emit(kind string, pid, prevPID int, reason string) {
	s.seq++
	s.setState(func(st *agentapi.EngineState) { st.TransitionSeq = s.seq })
	st := s.State()
	tr := agentapi.EngineTransition{BootID: s.bootID, Seq: s.seq, Kind: kind, MediaServerID: st.MediaServerID, PID: pid, PreviousPID: prevPID,
		LastAction: s.lastAction, Reason: reason, Version: st.Version, At: time.Now().UTC(),
		ControlAddr: st.ControlAddr, HTTPAddr: st.HTTPAddr, RTSPAddr: st.RTSPAddr, RTPPortMin: st.RTPPortMin, RTPPortMax: st.RTPPortMax}
	s.cfg.Log.Info(
		"engine transition",
		zap.String("kind", kind),
		zap.Int("pid", pid),
		zap.Int("previousPid", prevPID),
		zap.String("lastAction", s.lastAction),
		zap.String("reason", reason),
	)
	if s.cfg.Report != nil {
		s.cfg.Report(tr)
	}
}

// start launches the engine and waits until its health answers with its
// own pid; a start that does not get there is a failed start.
func (s *Supervisor) start(action string) error {
	s.lastAction = action
	s.setState(func(st *agentapi.EngineState) {
		st.Status, st.LastAction, st.NextStartAt = agentapi.EngineStarting, action, nil
	})
	p, err := s.launch()
	if err == nil {
		err = s.awaitHealthy(p)
	}
	if err != nil {
		s.failedStart(err)
		return err
	}
	s.proc, s.failing, s.healthBad = p, false, 0
	s.target.Store(&controlTarget{addr: p.control.ControlAddr, secret: p.secret})
	now := p.startedAt
	s.setState(func(st *agentapi.EngineState) {
		st.Status, st.PID, st.StartedAt, st.LastError = agentapi.EngineRunning, p.pid, &now, ""
		st.ControlAddr, st.HTTPAddr, st.RTSPAddr, st.RTPPortMin, st.RTPPortMax = p.control.ControlAddr, p.control.HTTPAddr, p.control.RTSPAddr, p.control.RTPPortMin, p.control.RTPPortMax
		st.MediaServerID = p.control.MediaServerID
	})
	s.emit(agentapi.TransitionStarted, p.pid, 0, "")
	return nil
}

func (s *Supervisor) launch() (*process, error) {
	cfg, err := engineapi.Load(s.cfg.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("engine configuration: %w", err)
	}
	secret, err := engineapi.ReadSecret(cfg.ControlSecretFile)
	if err != nil {
		return nil, fmt.Errorf("engine control secret: %w", err)
	}
	cmd := exec.Command(s.cfg.Binary, "engine", "--config", s.cfg.ConfigPath)
	tail := &lastLine{}
	cmd.Stdout, cmd.Stderr = s.cfg.Output, io.MultiWriter(s.cfg.Output, tail)
	// The engine dies with the agent instead of lingering on its ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.cfg.Binary, err)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, startedAt: time.Now().UTC(), control: cfg, secret: secret, stderr: tail}
	go func() {
		err := cmd.Wait()
		s.exits <- exit{pid: p.pid, err: err}
	}()
	return p, nil
}

// awaitHealthy polls health until it answers with the child's pid, the
// child exits, or the start timeout passes (then the child is killed).
func (s *Supervisor) awaitHealthy(p *process) error {
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case ex := <-s.exits:
			if ex.pid == p.pid {
				if last := p.stderr.String(); last != "" {
					return fmt.Errorf("the engine exited during start: %v: %s", exitText(ex.err), last)
				}
				return fmt.Errorf("the engine exited during start: %v", exitText(ex.err))
			}
			s.exited(ex)
		case <-time.After(50 * time.Millisecond):
		}
		h, err := s.health(p)
		if err == nil && h.PID == p.pid {
			s.setState(func(st *agentapi.EngineState) {
				st.Version, st.Streams, st.Players, st.Proxies = h.Version, h.Streams, h.Players, h.Proxies
			})
			return nil
		}
	}
	s.kill(p)
	return fmt.Errorf("the engine did not answer health within %s", s.cfg.StartTimeout)
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (s *Supervisor) kill(p *process) {
	p.stopping = true
	p.cmd.Process.Kill()
	for ex := range s.exits {
		if ex.pid == p.pid {
			return
		}
		s.exited(ex)
	}
}

// failedStart records a start that did not reach health and schedules the
// next one after the backoff; a streak of failures reports start_failed
// once, not once per attempt.
func (s *Supervisor) failedStart(err error) {
	s.backoff = nextBackoff(s.backoff, s.cfg.BackoffMin, s.cfg.BackoffMax)
	s.restartAt = time.Now().Add(s.backoff)
	next := s.restartAt.UTC()
	s.cfg.Log.Warn("engine start failed", zap.Error(err), zap.Duration("retryIn", s.backoff))
	s.setState(func(st *agentapi.EngineState) {
		st.Status, st.PID, st.StartedAt, st.LastError, st.NextStartAt = agentapi.EngineStartFailed, 0, nil, err.Error(), &next
		st.Restarts++
	})
	if !s.failing {
		s.failing = true
		s.emit(agentapi.TransitionStartFailed, 0, 0, truncate(err.Error(), 1024))
	}
}

func nextBackoff(cur, lo, hi time.Duration) time.Duration {
	if cur == 0 {
		return lo
	}
	return min(cur*2, hi)
}

// exited handles the exit of a process that was not being stopped: a
// crash. After a stable run it restarts at once; in a crash loop it backs
// off.
func (s *Supervisor) exited(ex exit) {
	p := s.proc
	if p == nil || ex.pid != p.pid || p.stopping {
		return
	}
	s.proc = nil
	s.target.Store(nil)
	ran := time.Since(p.startedAt)
	s.cfg.Log.Error("engine exited unexpectedly", zap.Int("pid", p.pid), zap.String("exit", exitText(ex.err)), zap.Duration("ran", ran))
	s.setState(func(st *agentapi.EngineState) {
		st.Status, st.PID, st.StartedAt, st.LastError = agentapi.EngineCrashed, 0, nil, "exited unexpectedly: "+exitText(ex.err)
		st.Restarts++
	})
	s.emit(agentapi.TransitionCrashed, 0, p.pid, exitText(ex.err))
	if !s.wantUp {
		return
	}
	if ran >= s.cfg.StableAfter {
		s.backoff = 0
		s.restartAt = time.Now()
	} else {
		s.backoff = nextBackoff(s.backoff, s.cfg.BackoffMin, s.cfg.BackoffMax)
		if s.backoff == s.cfg.BackoffMin {
			// The first crash after a good start restarts at once.
			s.restartAt = time.Now()
		} else {
			s.restartAt = time.Now().Add(s.backoff)
		}
	}
	next := s.restartAt.UTC()
	s.setState(func(st *agentapi.EngineState) { st.NextStartAt = &next })
}

// stop ends the running engine: SIGTERM, then SIGKILL after the timeout.
func (s *Supervisor) stop(action string, report bool) {
	p := s.proc
	s.lastAction = action
	p.stopping = true
	p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(s.cfg.StopTimeout)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case ex := <-s.exits:
			if ex.pid == p.pid {
				done = true
			} else {
				s.exited(ex)
			}
		case <-timer.C:
			s.cfg.Log.Warn("engine did not stop in time; killing it", zap.Int("pid", p.pid))
			p.cmd.Process.Kill()
		}
	}
	s.proc = nil
	s.target.Store(nil)
	s.setState(func(st *agentapi.EngineState) {
		st.Status, st.PID, st.StartedAt, st.LastAction, st.NextStartAt = agentapi.EngineStopped, 0, nil, action, nil
	})
	if report {
		s.emit(agentapi.TransitionStopped, 0, p.pid, "")
	}
}

func (s *Supervisor) health(p *process) (engineapi.Health, error) {
	var h engineapi.Health
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.control.ControlAddr+engineapi.PathHealth, nil)
	req.Header.Set("Authorization", "Bearer "+p.secret)
	resp, err := s.http.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("health answered %s", resp.Status)
	}
	return h, json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h)
}

// checkHealth polls a running engine; an engine that stops answering (or
// answers with another pid) is killed as hung, which reads as a crash.
func (s *Supervisor) checkHealth() {
	p := s.proc
	if p == nil {
		return
	}
	h, err := s.health(p)
	if err == nil && h.PID == p.pid {
		s.healthBad = 0
		s.setState(func(st *agentapi.EngineState) {
			st.Streams, st.Players, st.Proxies, st.Version = h.Streams, h.Players, h.Proxies, h.Version
		})
		return
	}
	s.healthBad++
	if s.healthBad >= s.cfg.HealthFailures {
		s.cfg.Log.Error("engine stopped answering health; killing it", zap.Int("pid", p.pid), zap.Error(err))
		p.cmd.Process.Kill()
	}
}

func (s *Supervisor) callReload() error {
	p := s.proc
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.control.ControlAddr+engineapi.PathReload, nil)
	req.Header.Set("Authorization", "Bearer "+p.secret)
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the engine refused to reload: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

func (s *Supervisor) readDesired() bool {
	if s.cfg.DesiredFile == "" {
		return true
	}
	b, err := os.ReadFile(s.cfg.DesiredFile)
	return err != nil || strings.TrimSpace(string(b)) != "stopped"
}

func (s *Supervisor) writeDesired(up bool) {
	if s.cfg.DesiredFile == "" {
		return
	}
	v := "running"
	if !up {
		v = "stopped"
	}
	os.WriteFile(s.cfg.DesiredFile, []byte(v+"\n"), 0o600)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
