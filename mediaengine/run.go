package mediaengine

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"go.uber.org/zap"

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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until the engine stops (benchmarks)")
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
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
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
