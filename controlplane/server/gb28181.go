package server

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/gb28181"
)

// startGB28181 runs the node's SIP registrar when a device password is
// configured. Every control node may take registrations; the device record
// says which one holds a device's transport.
func (s *Server) startGB28181(ctx context.Context, cfg config.Config, log *zap.Logger) error {
	if cfg.GB28181PasswordFile == "" {
		return nil
	}
	raw, err := os.ReadFile(cfg.GB28181PasswordFile)
	if err != nil {
		return fmt.Errorf("config field gb28181-password-file: %w", err)
	}
	gc := gb28181.DefaultConfig()
	gc.ID, gc.Domain, gc.Password, gc.ListenAddr = cfg.GB28181ID, cfg.GB28181Domain, strings.TrimSpace(string(raw)), cfg.SIPAddr
	svc, err := gb28181.New(gc, s.Node, s.Channels, cfg.NodeID, log.Named("gb28181"))
	if err != nil {
		return fmt.Errorf("gb28181: %w", err)
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	s.GB28181 = svc
	return nil
}
