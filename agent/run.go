package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/agent/commands"
	"github.com/svcplatform/svc/agent/engineconfig"
	"github.com/svcplatform/svc/agent/hosttune"
	"github.com/svcplatform/svc/agent/rtpport"
	"github.com/svcplatform/svc/agent/supervisor"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/shared/hostmetrics"
	"github.com/svcplatform/svc/shared/pki"
)

// ErrRestart asks the caller to run the agent again (the agent.restart
// command); `svc agent run` re-executes itself.
var ErrRestart = errors.New("agent restart requested")

// Options configure `svc agent run`. The engine settings seed the engine's
// configuration file the first time only; afterwards the file is changed
// through the engine configuration operations.
type Options struct {
	DataDir           string
	EngineBinary      string
	SysctlDir         string
	ProcSys           string
	HeartbeatInterval time.Duration
	// PollWait bounds one long poll (shorter than the control plane's 60 s).
	PollWait time.Duration

	MediaServerID     string
	EngineControlAddr string
	EngineHTTPAddr    string
	EngineRTSPAddr    string
	// EngineWebRTCAddr is the engine's WebRTC port, UDP and ICE-TCP
	// (WHEP/WHIP); empty keeps the engine's default (0.0.0.0:8189).
	EngineWebRTCAddr string
	RTPPortMin       int
	RTPPortMax       int
	EngineLogLevel   string
	// EngineDemoFile and EngineDemoPath, when set, make the engine loop a
	// clip as a live stream (the development demo; "builtin" is the clip
	// shipped in the binary).
	EngineDemoFile, EngineDemoPath string
	// Supervisor tuning; zero takes the supervisor's defaults.
	EngineBackoffMin time.Duration
	// EngineOutput receives the engine's log lines (default stderr).
	EngineOutput io.Writer
}

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	d := engineapi.Defaults()
	return Options{DataDir: "/var/lib/svc-agent", SysctlDir: "/etc/sysctl.d", ProcSys: "/proc/sys", HeartbeatInterval: 5 * time.Second,
		PollWait: 25 * time.Second, EngineControlAddr: d.ControlAddr, EngineHTTPAddr: d.HTTPAddr, EngineRTSPAddr: d.RTSPAddr,
		RTPPortMin: d.RTPPortMin, RTPPortMax: d.RTPPortMax, EngineLogLevel: d.LogLevel}
}

// agent is one running node agent.
type agent struct {
	o        Options
	log      *zap.Logger
	id       *identity
	client   *client
	bootID   string
	sampler  *hostmetrics.Sampler
	engine   *supervisor.Supervisor
	config   *engineconfig.File
	tuner    *hosttune.Tuner
	leases   *rtpport.Manager
	report   *transitionReporter
	renewNow chan chan error
	restart  chan struct{}
}

// Run runs the enrolled agent until ctx ends, the node is retired
// (ErrRetired) or a restart is requested (ErrRestart).
func Run(ctx context.Context, o Options, log *zap.Logger) error {
	id, err := loadIdentity(o.DataDir)
	if err != nil {
		return err
	}
	if o.EngineBinary == "" {
		if o.EngineBinary, err = os.Executable(); err != nil {
			return err
		}
	}
	log = log.With(zap.String("nodeId", id.nodeID()))
	a := &agent{o: o, log: log, id: id, client: newClient(id), bootID: uuid.NewString(), sampler: hostmetrics.New(),
		renewNow: make(chan chan error), restart: make(chan struct{}, 1)}
	engineDir := filepath.Join(o.DataDir, "engine")
	if err := os.MkdirAll(engineDir, 0o700); err != nil {
		return err
	}
	secret, err := controlSecret(filepath.Join(engineDir, "control.secret"))
	if err != nil {
		return err
	}
	a.report = &transitionReporter{client: a.client, log: log, queue: make(chan agentapi.EngineTransition, 256)}
	a.engine = supervisor.New(supervisor.Config{Binary: o.EngineBinary, ConfigPath: filepath.Join(engineDir, "engine.yaml"),
		DesiredFile: filepath.Join(engineDir, "desired-state"), Report: a.report.enqueue, Output: o.EngineOutput, Log: log.Named("engine"),
		BackoffMin: o.EngineBackoffMin})
	a.config = &engineconfig.File{Path: filepath.Join(engineDir, "engine.yaml"), BackupDir: filepath.Join(engineDir, "backups"),
		Managed: func(c *engineapi.Config) {
			servers := id.servers()
			c.NodeID, c.ControlSecretFile = id.nodeID(), secret
			// Hooks go to the control node the agent talks to, and to the
			// others when it does not answer.
			c.Hooks.URL = servers[0] + agentapi.PathEngineHooks
			c.Hooks.FallbackURLs = nil
			others := slices.Sorted(slices.Values(servers[1:]))
			for _, u := range others {
				c.Hooks.FallbackURLs = append(c.Hooks.FallbackURLs, u+agentapi.PathEngineHooks)
			}
			c.Hooks.ClientCertFile, c.Hooks.ClientKeyFile, c.Hooks.CAFile = id.certPath(), id.keyPath(), id.caPath()
		},
		Reload: func(ctx context.Context) error {
			_, err := a.engine.Reload(ctx)
			if errors.Is(err, supervisor.ErrNotRunning) {
				return engineconfig.ErrNotRunning
			}
			return err
		}}
	initial := engineapi.Defaults()
	initial.MediaServerID, initial.ControlAddr, initial.HTTPAddr, initial.RTSPAddr = o.MediaServerID, o.EngineControlAddr, o.EngineHTTPAddr, o.EngineRTSPAddr
	initial.RTPPortMin, initial.RTPPortMax, initial.LogLevel, initial.DataDir = o.RTPPortMin, o.RTPPortMax, o.EngineLogLevel, filepath.Join(engineDir, "data")
	initial.DemoFile, initial.DemoPath = o.EngineDemoFile, o.EngineDemoPath
	if o.EngineWebRTCAddr != "" {
		initial.WebRTC.UDPAddr, initial.WebRTC.TCPAddr = o.EngineWebRTCAddr, o.EngineWebRTCAddr
	}
	cfg, err := a.config.Ensure(initial)
	if err != nil {
		// The engine will fail to start and say so; the operator repairs
		// the file with a raw apply.
		log.Error("the engine configuration is not usable", zap.Error(err))
		cfg = initial
	}
	a.tuner = &hosttune.Tuner{ProcRoot: o.ProcSys, SysctlDir: o.SysctlDir, StateFile: filepath.Join(o.DataDir, "tuning.json")}
	if err := a.tuner.Restore(); err != nil {
		log.Warn("restoring the open-file limit failed", zap.Error(err))
	}
	if a.leases, err = rtpport.Open(id.nodeID(), cfg.RTPPortMin, cfg.RTPPortMax, filepath.Join(o.DataDir, "rtp-leases.json")); err != nil {
		return err
	}
	journal, err := commands.OpenJournal(filepath.Join(o.DataDir, "command-journal.jsonl"))
	if err != nil {
		return err
	}
	defer journal.Close()
	exec := &commands.Executor{Client: a.client, Journal: journal, Handlers: merge(a.handlers(), a.engineRelays()), Log: log.Named("commands"), PollWait: o.PollWait,
		Retired: func(err error) bool { return errors.Is(err, ErrRetired) }, Conflict: isConflict}

	log.Info("node agent started", zap.String("version", buildinfo.Version), zap.Strings("servers", id.servers()),
		zap.Time("certificateRenewsAt", pki.RenewAt(id.certificate())))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	fatal := make(chan error, 4)
	goRun := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				fatal <- err
			}
		}()
	}
	goRun(func(ctx context.Context) error { a.engine.Run(ctx); return nil })
	goRun(func(ctx context.Context) error { a.leases.Run(ctx); return nil })
	goRun(a.report.run)
	goRun(a.heartbeats)
	goRun(a.renewals)
	goRun(exec.Run)
	var result error
	select {
	case <-ctx.Done():
	case result = <-fatal:
		if errors.Is(result, ErrRetired) {
			log.Error("the control plane retired this node; the agent stops", zap.Error(result))
		}
	case <-a.restart:
		log.Info("restarting the agent on request")
		result = ErrRestart
	}
	cancel()
	wg.Wait()
	return result
}

// Post lets the command executor use the agent's client.
func (c *client) Post(ctx context.Context, path string, v, out any) error {
	return c.post(ctx, path, v, out)
}

// controlSecret reads the engine's control secret, creating it (mode 0600)
// on first start.
func controlSecret(path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		if err := writeFile0600(path, []byte(hex.EncodeToString(b)+"\n")); err != nil {
			return "", err
		}
	}
	return path, nil
}

// heartbeats sends the host and engine figures every interval.
func (a *agent) heartbeats(ctx context.Context) error {
	t := time.NewTicker(a.o.HeartbeatInterval)
	defer t.Stop()
	host, _ := os.Hostname()
	for {
		hb := agentapi.Heartbeat{AgentVersion: buildinfo.Version, Hostname: host, BootID: a.bootID, SentAt: time.Now().UTC(),
			Host: a.sampler.Host(ctx), Engine: a.engineState(ctx), ActiveLeases: a.leases.Active()}
		hb.CanTune, _ = a.tuner.CanApply()
		var resp agentapi.HeartbeatResponse
		cctx, cancel := context.WithTimeout(ctx, a.o.HeartbeatInterval)
		err := a.client.post(cctx, agentapi.PathHeartbeat, hb, &resp)
		cancel()
		switch {
		case errors.Is(err, ErrRetired):
			return err
		case err != nil && ctx.Err() == nil:
			a.log.Warn("heartbeat failed", zap.Error(err))
		case err == nil:
			if a.id.setServers(resp.ServerURLs) {
				a.refreshHooks(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// refreshHooks writes the control nodes the engine's hooks go to into its
// configuration when they changed, and has the running engine take them.
func (a *agent) refreshHooks(ctx context.Context) {
	wrote, err := a.config.Refresh()
	if err != nil {
		a.log.Warn("updating the engine's hook addresses failed", zap.Error(err))
		return
	}
	if !wrote {
		return
	}
	if _, err := a.engine.Reload(ctx); err != nil && !errors.Is(err, supervisor.ErrNotRunning) {
		a.log.Warn("the engine did not reload its hook addresses", zap.Error(err))
		return
	}
	a.log.Info("the engine's hooks now know every control node", zap.Strings("servers", a.id.servers()))
}

// engineState is the supervisor's view with the process's own figures.
func (a *agent) engineState(ctx context.Context) agentapi.EngineState {
	st := a.engine.State()
	if rss, cpu, ok := a.sampler.Process(ctx, st.PID); ok {
		st.RSSBytes, st.CPUPercent = rss, cpu
	}
	return st
}

// renewals renews the node certificate at two thirds of its life, or at
// once when asked; a failure is retried well before the certificate ends.
func (a *agent) renewals(ctx context.Context) error {
	for {
		cert := a.id.certificate()
		wait := time.Until(pki.RenewAt(cert))
		var reply chan error
		select {
		case <-ctx.Done():
			return nil
		case reply = <-a.renewNow:
		case <-time.After(max(wait, 0)):
		}
		err := a.renew(ctx)
		if reply != nil {
			reply <- err
		}
		if err != nil {
			if errors.Is(err, ErrRetired) {
				return err
			}
			retry := min(time.Until(cert.NotAfter)/10, time.Hour)
			a.log.Error("certificate renewal failed", zap.Error(err), zap.Duration("retryIn", retry))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(max(retry, 10*time.Second)):
			}
		}
	}
}

func (a *agent) renew(ctx context.Context) error {
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	csr, err := pki.NewCSR(key, a.id.nodeID())
	if err != nil {
		return err
	}
	var resp agentapi.RenewResponse
	if err := a.client.post(ctx, agentapi.PathRenew, agentapi.RenewRequest{CSR: string(csr)}, &resp); err != nil {
		return err
	}
	cert, err := pki.ParseCert([]byte(resp.Certificate))
	if err != nil {
		return err
	}
	if id, err := pki.AgentNodeID(cert); err != nil || id != a.id.nodeID() {
		return fmt.Errorf("renewed certificate names %q, not %q", id, a.id.nodeID())
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return err
	}
	if err := a.id.storeRenewed(keyPEM, []byte(resp.Certificate)); err != nil {
		return err
	}
	a.id.setServers(resp.ServerURLs)
	a.log.Info("node certificate renewed", zap.String("serial", pki.SerialHex(cert)), zap.Time("notAfter", cert.NotAfter))
	return nil
}

// transitionReporter delivers engine transitions in order, retrying until
// the control plane has them.
type transitionReporter struct {
	client *client
	log    *zap.Logger
	queue  chan agentapi.EngineTransition
}

func (r *transitionReporter) enqueue(tr agentapi.EngineTransition) {
	select {
	case r.queue <- tr:
	default:
		r.log.Error("engine transition queue full; dropping", zap.String("kind", tr.Kind))
	}
}

func (r *transitionReporter) run(ctx context.Context) error {
	for {
		var tr agentapi.EngineTransition
		select {
		case <-ctx.Done():
			return nil
		case tr = <-r.queue:
		}
		backoff := 100 * time.Millisecond
		for {
			err := r.client.post(ctx, agentapi.PathEngineTransition, tr, nil)
			if err == nil || ctx.Err() != nil {
				break
			}
			if errors.Is(err, ErrRetired) {
				return err
			}
			var re *RemoteError
			if errors.As(err, &re) && re.Status == 400 {
				r.log.Error("engine transition refused", zap.Error(err))
				break
			}
			r.log.Warn("reporting an engine transition failed; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}
}
