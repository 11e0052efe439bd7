package mediaengine

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/shared/logging"
)

// ErrHelp is returned when -h was asked for.
var ErrHelp = errors.New("help requested")

// Run is `svc engine --config FILE`: the media engine process, started and
// watched by the node agent. It serves the loopback control API until
// SIGINT or SIGTERM; SIGHUP re-reads the configuration like PathReload.
func Run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("svc engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "engine configuration file (YAML, written by the agent)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return err
	}
	if *path == "" {
		return errors.New("engine: --config is required")
	}
	cfg, err := engineapi.Load(*path)
	if err != nil {
		return err
	}
	log, err := logging.New(cfg.LogLevel, cfg.NodeID)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	e, err := Start(ctx, *path, cfg, log)
	if err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return e.Close()
		case <-hup:
			if _, err := e.Reload(); err != nil {
				log.Warn("reload refused", zap.Error(err))
			}
		}
	}
}

// Engine is a running media engine.
type Engine struct {
	path      string
	cfg       atomic.Pointer[engineapi.Config]
	log       *zap.Logger
	secret    string
	startedAt time.Time
	control   *http.Server
	done      chan struct{}
}

// Start opens the engine's listeners and returns once it serves.
func Start(ctx context.Context, path string, cfg engineapi.Config, log *zap.Logger) (*Engine, error) {
	if cfg.ControlSecretFile == "" {
		return nil, errors.New("engine: controlSecretFile is required: the control API is never open")
	}
	secret, err := engineapi.ReadSecret(cfg.ControlSecretFile)
	if err != nil {
		return nil, fmt.Errorf("engine: control secret: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.ControlAddr)
	if err != nil {
		return nil, fmt.Errorf("engine: control API: %w", err)
	}
	e := &Engine{path: path, log: log, secret: secret, startedAt: time.Now().UTC(), done: make(chan struct{})}
	e.cfg.Store(&cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+engineapi.PathHealth, e.health)
	mux.HandleFunc("POST "+engineapi.PathReload, e.reload)
	e.control = &http.Server{Handler: e.authorized(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(e.done)
		if err := e.control.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", zap.Error(err))
		}
	}()
	log.Info("engine started", zap.String("control", ln.Addr().String()), zap.String("mediaServerId", cfg.MediaServerID), zap.Int("pid", os.Getpid()))
	return e, nil
}

// Close stops the engine.
func (e *Engine) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.control.Shutdown(ctx)
	<-e.done
	e.log.Info("engine stopped")
	return err
}

// Reload re-reads the configuration file; a file that does not parse is
// refused and the running configuration stays.
func (e *Engine) Reload() (engineapi.Config, error) {
	cfg, err := engineapi.Load(e.path)
	if err != nil {
		return engineapi.Config{}, err
	}
	e.cfg.Store(&cfg)
	e.log.Info("configuration reloaded")
	return cfg, nil
}

func (e *Engine) authorized(next http.Handler) http.Handler {
	want := []byte("Bearer " + e.secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, "unauthorized", "the control API needs the engine's control secret")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (e *Engine) health(w http.ResponseWriter, _ *http.Request) {
	cfg := e.cfg.Load()
	writeJSON(w, http.StatusOK, engineapi.Health{Status: "ok", PID: os.Getpid(), Version: buildinfo.Version,
		MediaServerID: cfg.MediaServerID, StartedAt: e.startedAt})
}

func (e *Engine) reload(w http.ResponseWriter, _ *http.Request) {
	if _, err := e.Reload(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_config", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"code": code, "message": msg})
}
