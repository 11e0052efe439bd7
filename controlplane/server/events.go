package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/tasks"
	"github.com/svcplatform/svc/controlplane/webhooks"
)

// startEvents assembles the event outbox, the delivery plans and the
// leader-only dispatcher, and registers the retention task.
func (s *Server) startEvents(bg context.Context, cfg config.Config, keys *keyring.Keyring, reg *tasks.Registry) error {
	node := s.Node
	targets := &webhooks.TargetGuard{AllowPrivate: cfg.WebhookAllowPrivateTargets}
	s.Events = &events.Service{Store: node, Reader: node.State(), NodeID: cfg.NodeID}
	s.Dispatcher = &webhooks.Dispatcher{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: cfg.NodeID, Log: s.Log.Named("webhooks")}
	s.Webhooks = &webhooks.Service{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: cfg.NodeID, Kick: s.Dispatcher.Kick}
	s.sockets = &httpapi.RuntimeSockets{Ctx: bg}
	if cfg.WebhookLegacySecretFile != "" {
		b, err := os.ReadFile(cfg.WebhookLegacySecretFile)
		if err != nil {
			return fmt.Errorf("webhook legacy secret file: %w", err)
		}
		s.legacyWebhook = webhooks.LegacyEndpoint{URL: cfg.WebhookLegacyEndpoint, Secret: strings.TrimSpace(string(b))}
	}
	retention := webhooks.Retention{MaxAge: cfg.EventOutboxRetention, MaxEntries: cfg.EventOutboxMaxEntries}
	reg.Register(tasks.Task{
		Name: "event-retention", Description: "remove delivered outbox events (the webhook inbox's engine hooks among them) beyond the configured retention",
		LeaderOnly: true, Interval: time.Minute,
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			// Each removal takes batches of 500 until one comes back short.
			drain := func(remove func(batch int) (int64, error)) (int64, error) {
				var total int64
				for {
					n, err := remove(500)
					total += n
					if err != nil || n < 500 {
						return total, err
					}
				}
			}
			events, err := drain(func(batch int) (int64, error) { return s.Webhooks.PruneOutbox(ctx, retention, batch) })
			if err != nil {
				return "", nil, err
			}
			legacy, err := drain(func(batch int) (int64, error) { return s.Events.DropLegacyInbox(ctx, batch) })
			if err != nil {
				return "", nil, err
			}
			return "retention applied", map[string]string{"outboxEvents": fmt.Sprint(events), "legacyInboxCopies": fmt.Sprint(legacy)}, nil
		},
	})
	return nil
}

// migrateLegacyWebhook runs the one-time migration of the legacy endpoint
// on the leader.
func (s *Server) migrateLegacyWebhook(ctx context.Context) {
	if s.legacyWebhook.URL == "" {
		return
	}
	retryEverySecond(ctx, s.Log, "migrating the legacy webhook endpoint", func(ctx context.Context) error {
		created, err := s.Webhooks.MigrateLegacy(ctx, s.legacyWebhook)
		if errors.Is(err, webhooks.ErrInvalid) || errors.Is(err, webhooks.ErrTargetRefused) {
			s.Log.Error("legacy webhook endpoint not migrated", zap.Error(err))
			return nil // a configuration problem: retrying cannot help
		}
		if err != nil {
			return err
		}
		if created {
			s.Log.Info("legacy webhook endpoint migrated to a delivery plan", zap.String("plan", webhooks.DefaultPlanName))
		}
		return nil
	})
}
