package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/svcplatform/svc/shared/logging"
)

// ErrHelp is returned when -h was asked for.
var ErrHelp = errors.New("help requested")

// ExitError carries the process exit status a command wants.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

const usage = `usage: svc agent <command> [flags]

commands:
  enroll    enroll this host with a one-time code (svc agent enroll -h)
  run       run the node agent (svc agent run -h)
  install   write and enable the systemd unit (svc agent install -h)
`

// Main is `svc agent`.
func Main(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &ExitError{Code: 2, Err: errors.New("svc agent needs a command")}
	}
	switch args[0] {
	case "enroll":
		return mainEnroll(args[1:], stdout, stderr)
	case "run":
		return mainRun(args[1:], stderr)
	case "install":
		return mainInstall(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return &ExitError{Code: 2, Err: fmt.Errorf("unknown agent command %q", args[0])}
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}

func mainEnroll(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("svc agent enroll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o EnrollOptions
	fs.StringVar(&o.Server, "server", "", "https URL of the agent port (from the enrollment answer)")
	fs.StringVar(&o.Code, "code", "", "the one-time enrollment code")
	fs.StringVar(&o.CAHash, "ca-hash", "", "pin of the cluster CA, sha256:HEX; the server's CA must match it")
	fs.StringVar(&o.DataDir, "data-dir", DefaultOptions().DataDir, "where the node key, certificate and state are kept (mode 0600)")
	fs.StringVar(&o.Hostname, "hostname", "", "host name to report (default: this host's name)")
	fs.BoolVar(&o.Force, "force", false, "replace an existing enrollment in --data-dir")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := Enroll(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enrolled as node %s; key and certificate are in %s\nnext: svc agent run --data-dir %s (or svc agent install)\n", id, o.DataDir, o.DataDir)
	return nil
}

func mainRun(args []string, stderr io.Writer) error {
	o := DefaultOptions()
	fs := flag.NewFlagSet("svc agent run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "the enrolled data directory")
	fs.StringVar(&o.EngineBinary, "engine-binary", "", "svc binary that runs the engine (default: this executable)")
	fs.StringVar(&o.SysctlDir, "sysctl-dir", o.SysctlDir, "directory where host tuning is persisted")
	fs.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", o.HeartbeatInterval, "how often host and engine figures are reported")
	fs.DurationVar(&o.PollWait, "poll-wait", o.PollWait, "how long one long poll for node commands waits")
	fs.StringVar(&o.MediaServerID, "media-server-id", "", "media server id of the engine (first start only; default: the node id)")
	fs.StringVar(&o.EngineControlAddr, "engine-control-addr", o.EngineControlAddr, "loopback address of the engine control API (first start only)")
	fs.StringVar(&o.EngineHTTPAddr, "engine-http-addr", o.EngineHTTPAddr, "engine media HTTP address (first start only)")
	fs.StringVar(&o.EngineRTSPAddr, "engine-rtsp-addr", o.EngineRTSPAddr, "engine RTSP address (first start only)")
	fs.StringVar(&o.EngineWebRTCAddr, "engine-webrtc-addr", "", "engine WebRTC address, UDP and ICE-TCP (first start only; default 0.0.0.0:8189)")
	fs.IntVar(&o.RTPPortMin, "rtp-port-min", o.RTPPortMin, "first port of the RTP range (first start only)")
	fs.IntVar(&o.RTPPortMax, "rtp-port-max", o.RTPPortMax, "last port of the RTP range (first start only)")
	fs.DurationVar(&o.EngineBackoffMin, "engine-backoff-min", 0, "first delay before restarting an engine that failed to start (default 1s)")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := logging.New(*logLevel, "")
	if err != nil {
		return err
	}
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = Run(ctx, o, log)
	switch {
	case errors.Is(err, ErrRestart):
		exe, xerr := os.Executable()
		if xerr != nil {
			return xerr
		}
		log.Sync()
		return syscall.Exec(exe, os.Args, os.Environ())
	case errors.Is(err, ErrRetired):
		return &ExitError{Code: ExitRetired, Err: err}
	}
	return err
}

func mainInstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("svc agent install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exe, _ := os.Executable()
	var o InstallOptions
	fs.StringVar(&o.Binary, "binary", exe, "absolute path of the svc binary the unit runs")
	fs.StringVar(&o.DataDir, "data-dir", DefaultOptions().DataDir, "the enrolled data directory")
	fs.StringVar(&o.UnitDir, "unit-dir", "/etc/systemd/system", "where the unit file is written")
	noEnable := fs.Bool("no-enable", false, "only write the unit; do not run systemctl")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.Enable = !*noEnable
	var err error
	if o.DataDir, err = filepath.Abs(o.DataDir); err != nil {
		return err
	}
	path, err := Install(o)
	if path != "" {
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	if err != nil {
		return err
	}
	if o.Enable {
		fmt.Fprintf(stdout, "enabled and started %s\n", UnitName)
	}
	return nil
}
