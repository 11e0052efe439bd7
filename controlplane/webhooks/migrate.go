package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// DefaultPlanName is the name the legacy endpoint migrates to.
const DefaultPlanName = "Default delivery plan"

// migratedKey records that the legacy endpoint was migrated (or that the
// migration found plans and stood down), so it never runs twice.
const migratedKey = "/webhooks/meta/legacy-migrated"

// LegacyEndpoint is the single outbound endpoint of older versions: the
// server settings webhookLegacyEndpoint and webhookLegacySecretFile.
type LegacyEndpoint struct {
	URL, Secret string
}

// DefaultLegacyEvents is the scope the legacy endpoint had: every event.
var DefaultLegacyEvents = []string{"media.*", "recording.*", "device.*", "rtc.*", "engine.webhook.*"}

// MigrateLegacy turns the legacy endpoint into the plan "Default delivery
// plan", with its secret sealed by the keyring, only when no plan (active
// or archived) exists and only once. It reports whether it created the
// plan. Once migrated, the legacy settings are no longer read.
func (s *Service) MigrateLegacy(ctx context.Context, legacy LegacyEndpoint) (bool, error) {
	if legacy.URL == "" {
		return false, nil
	}
	if kv, _, err := store.Get(ctx, s.Store, migratedKey, store.Local); err != nil || kv != nil {
		return false, err
	}
	in := PlanInput{Name: DefaultPlanName, Description: "migrated from the legacy single outbound-webhook endpoint",
		Endpoint: legacy.URL, Secret: legacy.Secret, Enabled: true, Events: DefaultLegacyEvents,
		AllowHTTP: strings.HasPrefix(legacy.URL, "http:"), TimeoutSeconds: 10, MaxAttempts: 5}
	scope, err := s.validate(ctx, &in, true)
	if err != nil {
		return false, fmt.Errorf("legacy webhook endpoint cannot be migrated: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return false, err
	}
	now := s.now()
	a := audit.Actor{Type: "system", ID: "legacy-webhook-migration"}
	p := &Plan{ID: PlanID(id.String()), Name: in.Name, Description: in.Description, Endpoint: in.Endpoint, Enabled: true,
		Events: scope, AllowHTTP: in.AllowHTTP, TimeoutSeconds: in.TimeoutSeconds, MaxAttempts: in.MaxAttempts,
		SecretUpdatedAt: now, CreatedAt: now, CreatedBy: by(a), UpdatedAt: now, UpdatedBy: by(a)}
	if p.SealedSecret, err = s.Keys.Seal([]byte(in.Secret), []byte(p.key())); err != nil {
		return false, err
	}
	err = s.create(ctx, a, p, []store.Compare{store.Absent(planExistsKey), store.Absent(migratedKey)}, store.Put(migratedKey, []byte(p.ID)))
	if errors.Is(err, ErrNameTaken) {
		// A plan exists (or the name is taken): the migration stands down
		// for good.
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(migratedKey)},
			Then: []store.Op{store.Put(migratedKey, []byte("skipped: delivery plans exist"))}}); err != nil {
			return false, err
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
