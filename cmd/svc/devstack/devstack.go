// Package devstack adds the local media host to `svc dev`: a node agent
// enrolled against the development control node (its data in
// <data-dir>/agent) that supervises a local `svc engine`, so a newcomer's
// `make run` shows a media server online. It is composition only: the
// agent talks to the control node over the agent port, as in production.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/agent"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/shared/logging"
)

// NodeID is the development media host.
const NodeID = "dev-media"

// LocalAgent enrolls the development agent once and runs it until ctx ends.
func LocalAgent(ctx context.Context, s *server.Server, stdout io.Writer) (func(), error) {
	dataDir := filepath.Join(s.Config.DataDir, "agent")
	if _, err := os.Stat(filepath.Join(dataDir, "agent.json")); errors.Is(err, os.ErrNotExist) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		url, code, hash, err := s.LocalEnrollment(cctx, NodeID)
		if err != nil {
			return nil, fmt.Errorf("enrolling the development agent: %w", err)
		}
		if _, err := agent.Enroll(cctx, agent.EnrollOptions{Server: url, Code: code, CAHash: hash, DataDir: dataDir}); err != nil {
			return nil, fmt.Errorf("enrolling the development agent: %w", err)
		}
	}
	log, err := logging.New(s.Config.LogLevel, NodeID)
	if err != nil {
		return nil, err
	}
	o := agent.DefaultOptions()
	o.DataDir = dataDir
	// svc dev keeps its media ports on loopback and its host tuning inside
	// the data directory, away from /etc.
	c := s.Config
	o.EngineHTTPAddr, o.EngineRTSPAddr, o.EngineControlAddr = c.DevEngineHTTPAddr, c.DevEngineRTSPAddr, c.DevEngineControlAddr
	o.RTPPortMin, o.RTPPortMax = c.DevEngineRTPPortMin, c.DevEngineRTPPortMax
	o.EngineWebRTCAddr = c.DevEngineWebRTCAddr
	o.EngineDemoFile, o.EngineDemoPath = "builtin", DemoSourcePath
	o.SysctlDir = filepath.Join(dataDir, "sysctl.d")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			err := agent.Run(ctx, o, log.Named("agent"))
			if errors.Is(err, agent.ErrRestart) && ctx.Err() == nil {
				continue
			}
			if err != nil && ctx.Err() == nil {
				log.Error("the development agent stopped", zap.Error(err))
			}
			return
		}
	}()
	fmt.Fprintf(stdout, "local media server %s: node agent data in %s; engine media HTTP http://%s, RTSP rtsp://%s\n", NodeID, dataDir, o.EngineHTTPAddr, o.EngineRTSPAddr)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := DemoChannel(ctx, s, o.EngineRTSPAddr, stdout); err != nil && ctx.Err() == nil {
			log.Error("the demo channel could not be set up", zap.Error(err))
		}
	}()
	return wg.Wait, nil
}
