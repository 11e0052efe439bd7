package server

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

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/gcfloor"
	"github.com/svcplatform/svc/shared/logging"
)

// RunServer is `svc server`: a control node configured by flags,
// environment and file, running until SIGINT or SIGTERM.
func RunServer(args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, os.LookupEnv, config.Defaults(), stderr)
	if err != nil {
		return err
	}
	return run(cfg, stdout, nil)
}

// RunRemoveMember is `svc remove-member`: it asks the cluster, through any
// member's API, to remove a control node from the raft configuration. The
// request is signed with the cluster key, so only holders of the key file
// can change membership.
func RunRemoveMember(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("svc remove-member", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:8080", "API URL of any cluster member")
	keyFile := fs.String("cluster-key-file", "", "the cluster key file (required)")
	nodeID := fs.String("node-id", "", "id of the control node to remove (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config.ErrHelp
		}
		return err
	}
	if *keyFile == "" || *nodeID == "" {
		return fmt.Errorf("remove-member needs --cluster-key-file and --node-id")
	}
	keys, err := keyring.LoadOrCreate(*keyFile, false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := callInternal(ctx, keys, *server, httpapi.RemovePath, map[string]string{"nodeId": *nodeID}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s from the cluster; stop its process now\n", *nodeID)
	return nil
}

// DevDefaults is `svc dev`'s starting point: one node, data in ./.svc-dev.
func DevDefaults() config.Config {
	c := config.Defaults()
	c.NodeID = "dev"
	c.DataDir = ".svc-dev"
	c.Bootstrap = true
	// Everything of svc dev stays on this machine.
	c.AgentAddr = "127.0.0.1:8443"
	c.DevEngineHTTPAddr, c.DevEngineRTSPAddr, c.DevEngineControlAddr = "127.0.0.1:8088", "127.0.0.1:8554", "127.0.0.1:8089"
	c.DevEngineRTPPortMin, c.DevEngineRTPPortMax = 30000, 30999
	c.DevEngineWebRTCAddr = "127.0.0.1:8189"
	// Webhook receivers on this machine are what a developer tries first;
	// svc dev is a loopback sandbox, so it lets plans target loopback
	// (svc server keeps the SSRF guard on unless told otherwise).
	c.WebhookAllowPrivateTargets = true
	return c
}

// LocalRoles starts further roles of `svc dev` beside the control node (the
// node agent and its engine); they run until ctx ends, and the returned
// wait blocks until they have stopped.
type LocalRoles func(ctx context.Context, s *Server, stdout io.Writer) (wait func(), err error)

// RunDev is `svc dev`: a single-node control plane that founds its own
// cluster and, on first start, creates a development API token; local
// (may be nil) adds the local media host.
func RunDev(args []string, stdout, stderr io.Writer, local LocalRoles) error {
	cfg, err := config.Load(args, os.LookupEnv, DevDefaults(), stderr)
	if err != nil {
		return err
	}
	var wait func()
	err = run(cfg, stdout, func(ctx context.Context, s *Server) error {
		if err := devToken(ctx, s, stdout); err != nil || local == nil {
			return err
		}
		wait, err = local(ctx, s, stdout)
		return err
	}, func() {
		if wait != nil {
			wait()
		}
	})
	return err
}

func run(cfg config.Config, stdout io.Writer, afterStart func(context.Context, *Server) error, beforeShutdown ...func()) error {
	log, err := logging.New(cfg.LogLevel, cfg.NodeID)
	if err != nil {
		return err
	}
	defer log.Sync()
	defer gcfloor.Start(cfg.GCHeapFloorBytes())()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, err := Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "svc control node %s is serving the API and the web console at %s (data in %s)\n", cfg.NodeID, cfg.APIURL(), cfg.DataDir)
	if afterStart != nil {
		if err := afterStart(ctx, s); err != nil {
			s.Shutdown()
			return err
		}
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down")
	for _, f := range beforeShutdown {
		f()
	}
	return s.Shutdown()
}

// Files `svc dev` keeps in its data directory (mode 0600).
const (
	devTokenFile    = "dev-api-token"
	devPasswordFile = "dev-admin-password"
)

// devToken sets up, once per data directory, the first administrator
// (user "admin", a random password printed once) and an API token it owns,
// so a newcomer can follow the README tour. Real clusters bootstrap their
// first administrator through POST /api/v2/auth/bootstrap.
func devToken(ctx context.Context, s *Server, stdout io.Writer) error {
	tokenPath := filepath.Join(s.Config.DataDir, devTokenFile)
	pwPath := filepath.Join(s.Config.DataDir, devPasswordFile)
	if _, err := os.Stat(tokenPath); err == nil {
		fmt.Fprintf(stdout, "development administrator: user admin, password in %s\ndevelopment API token: in %s\n", pwPath, tokenPath)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	password, err := devPassword()
	if err != nil {
		return err
	}
	admin, err := s.Accounts.Bootstrap(cctx, account.Actor{Actor: audit.Actor{Type: "system", ID: "svc-dev"}}, "admin", password, "Development administrator")
	if err != nil {
		return fmt.Errorf("bootstrapping the development administrator: %w", err)
	}
	if err := os.WriteFile(pwPath, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	tok, err := apitoken.New()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	exp := now.Add(30 * 24 * time.Hour)
	id := fmt.Sprintf("dev-%d", now.Unix())
	op, err := apitoken.Put(apitoken.Record{TokenID: id, Name: "svc dev bootstrap", Purpose: "local development (svc dev)", OwnerUserID: admin.UserID,
		Digest: apitoken.Digest(tok), TokenPrefix: tok[:12], Permissions: []string{"*"}, AllowedIPs: []string{"127.0.0.0/8", "::1/128"},
		ExpiresAt: &exp, CreatedAt: now, CreatedBy: "system:svc-dev"})
	if err != nil {
		return err
	}
	if _, err := s.Node.Txn(cctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		return fmt.Errorf("creating the development token: %w", err)
	}
	if err := os.WriteFile(tokenPath, []byte(tok+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "development administrator (shown once, also saved to %s with mode 0600):\n  user admin, password %s\n", pwPath, password)
	fmt.Fprintf(stdout, "development API token owned by admin (shown once, also saved to %s, valid 30 days from loopback only):\n  %s\n", tokenPath, tok)
	return nil
}

// devPassword is four random words' worth of entropy in base62 (about 119
// bits), easy to copy.
func devPassword() (string, error) {
	tok, err := apitoken.New()
	if err != nil {
		return "", err
	}
	return tok[len(apitoken.Prefix) : len(apitoken.Prefix)+20], nil
}
