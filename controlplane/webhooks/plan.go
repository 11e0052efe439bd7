// Package webhooks delivers the event outbox to business systems: delivery
// plans (one endpoint each, with its own secret, event scope, timeout and
// retries), one delivery per plan and event, and the dispatcher that runs
// on the raft leader only, claims deliveries with a compare, signs and
// POSTs them and retries with backoff (contract A, "Events").
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Store keys of this package.
const (
	PlanPrefix = "/webhooks/plans/"
	// namePrefix reserves a plan name (lower-cased) for one plan, so two
	// plans cannot get the same name even when created on two nodes at once.
	namePrefix = "/webhooks/plan-names/"
	// planExistsKey is written by every plan creation; the legacy migration
	// compares it absent, so it can never race a plan an operator creates.
	planExistsKey = "/webhooks/meta/plan-exists"
)

// PlanID identifies a delivery plan.
type PlanID string

// Plan is a stored delivery plan. SealedSecret is the HMAC secret sealed
// with the cluster keyring and bound to the plan's key; it never leaves
// this package in plain text except to sign.
type Plan struct {
	ID              PlanID     `json:"id"`
	Name            string     `json:"name"`
	Description     string     `json:"description"`
	Endpoint        string     `json:"endpoint"`
	SealedSecret    string     `json:"sealedSecret"`
	Enabled         bool       `json:"enabled"`
	Events          []string   `json:"events"`
	AllowHTTP       bool       `json:"allowHttp"`
	TimeoutSeconds  int        `json:"timeoutSeconds"`
	MaxAttempts     int        `json:"maxAttempts"`
	Archived        bool       `json:"archived"`
	ArchivedAt      *time.Time `json:"archivedAt,omitempty"`
	SecretUpdatedAt time.Time  `json:"secretUpdatedAt"`
	CreatedAt       time.Time  `json:"createdAt"`
	CreatedBy       string     `json:"createdBy"`
	UpdatedAt       time.Time  `json:"updatedAt"`
	UpdatedBy       string     `json:"updatedBy"`
}

func (p *Plan) key() string { return PlanPrefix + string(p.ID) }

// PlanInput is OutboundWebhookSubscriptionRequest.
type PlanInput struct {
	Name, Description, Endpoint string
	// Secret is required on create; empty on update keeps the secret.
	Secret         string
	Enabled        bool
	Events         []string
	AllowHTTP      bool
	TimeoutSeconds int
	MaxAttempts    int
}

// Limits of a plan (contract A, "Limits").
const (
	MaxNameLen        = 128
	MaxDescriptionLen = 512
	MinSecretLen      = 16
	MaxSecretLen      = 256
	MinTimeout        = 2
	MaxTimeout        = 30
	MaxMaxAttempts    = 10
	maxSelectors      = 100
)

// Service manages delivery plans and deliveries.
type Service struct {
	Store   store.Store
	Reader  query.Reader
	Keys    *keyring.Keyring
	Targets *TargetGuard
	// NodeID is this control node, the nodeId of test events.
	NodeID string
	Clock  events.Clock
	// Kick, when set, wakes the local dispatcher after a change it should
	// act on at once (it also watches the store, for changes made on other
	// nodes).
	Kick func()
}

func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now().UTC()
	}
	return s.Clock.Now().UTC()
}

func (s *Service) kick() {
	if s.Kick != nil {
		s.Kick()
	}
}

// validate checks every rule of the plan table and returns the normalised
// event scope.
func (s *Service) validate(ctx context.Context, in *PlanInput, create bool) ([]string, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || utf8.RuneCountInString(in.Name) > MaxNameLen || name != in.Name {
		return nil, fmt.Errorf("%w: name must be 1-%d characters without leading or trailing spaces", ErrInvalid, MaxNameLen)
	}
	if utf8.RuneCountInString(in.Description) > MaxDescriptionLen {
		return nil, fmt.Errorf("%w: description must be at most %d characters", ErrInvalid, MaxDescriptionLen)
	}
	u, err := ParseEndpoint(in.Endpoint, in.AllowHTTP)
	if err != nil {
		return nil, err
	}
	if create && in.Secret == "" {
		return nil, fmt.Errorf("%w: secret is required when a plan is created", ErrInvalid)
	}
	if n := utf8.RuneCountInString(in.Secret); in.Secret != "" && (n < MinSecretLen || n > MaxSecretLen) {
		return nil, fmt.Errorf("%w: secret must be %d-%d characters", ErrInvalid, MinSecretLen, MaxSecretLen)
	}
	if in.TimeoutSeconds < MinTimeout || in.TimeoutSeconds > MaxTimeout {
		return nil, fmt.Errorf("%w: timeoutSeconds must be %d-%d", ErrInvalid, MinTimeout, MaxTimeout)
	}
	if in.MaxAttempts < 1 || in.MaxAttempts > MaxMaxAttempts {
		return nil, fmt.Errorf("%w: maxAttempts must be 1-%d", ErrInvalid, MaxMaxAttempts)
	}
	if len(in.Events) == 0 || len(in.Events) > maxSelectors {
		return nil, fmt.Errorf("%w: events must hold 1-%d exact event names or prefixes ending in .*", ErrInvalid, maxSelectors)
	}
	var scope []string
	seen := map[string]bool{}
	for _, e := range in.Events {
		n, err := events.NormalizeEventName(e)
		if err == nil {
			err = events.ValidateSelector(n)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if !seen[n] {
			seen[n] = true
			scope = append(scope, n)
		}
	}
	if s.Targets != nil {
		if err := s.Targets.CheckHost(ctx, u.Hostname()); err != nil {
			return nil, err
		}
	}
	return scope, nil
}

func nameKey(name string) string { return namePrefix + strings.ToLower(name) }

func by(a audit.Actor) string { return a.Type + ":" + a.ID }

// Create stores a new plan.
func (s *Service) Create(ctx context.Context, a audit.Actor, in PlanInput) (*Plan, error) {
	scope, err := s.validate(ctx, &in, true)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := s.now()
	p := &Plan{ID: PlanID(id.String()), Name: in.Name, Description: in.Description, Endpoint: in.Endpoint, Enabled: in.Enabled,
		Events: scope, AllowHTTP: in.AllowHTTP, TimeoutSeconds: in.TimeoutSeconds, MaxAttempts: in.MaxAttempts,
		SecretUpdatedAt: now, CreatedAt: now, CreatedBy: by(a), UpdatedAt: now, UpdatedBy: by(a)}
	if p.SealedSecret, err = s.Keys.Seal([]byte(in.Secret), []byte(p.key())); err != nil {
		return nil, err
	}
	return p, s.create(ctx, a, p, nil)
}

// create commits a new plan with its name reservation; extra compares
// guard special creations (the legacy migration).
func (s *Service) create(ctx context.Context, a audit.Actor, p *Plan, extra []store.Compare, extraOps ...store.Op) error {
	put, aud, err := p.put(a, "webhook.subscription.created", p.Name)
	if err != nil {
		return err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{
		Compares: append([]store.Compare{store.Absent(nameKey(p.Name))}, extra...),
		Then: append([]store.Op{put, store.Put(nameKey(p.Name), []byte(p.ID)),
			store.Put(planExistsKey, []byte(p.ID)), aud}, extraOps...),
	})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %q", ErrNameTaken, p.Name)
	}
	s.kick()
	return nil
}

// GetPlan reads one plan with its mod revision.
func (s *Service) GetPlan(ctx context.Context, id PlanID) (*Plan, int64, error) {
	return getPlan(ctx, s.Store, id)
}

func getPlan(ctx context.Context, st store.Store, id PlanID) (*Plan, int64, error) {
	return getRecord[Plan](ctx, st, PlanPrefix, string(id), "delivery plan")
}

// getRecord reads the JSON record prefix+id with its mod revision; an id
// that could leave the prefix, or a missing key, is ErrNotFound.
func getRecord[T any](ctx context.Context, st store.Store, prefix, id, what string) (*T, int64, error) {
	if id == "" || strings.Contains(id, "/") {
		return nil, 0, fmt.Errorf("%w: %s %q", ErrNotFound, what, id)
	}
	kv, _, err := store.Get(ctx, st, prefix+id, store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil {
		return nil, 0, fmt.Errorf("%w: %s %q", ErrNotFound, what, id)
	}
	v, err := store.Decode[T](kv)
	if err != nil {
		return nil, 0, err
	}
	return &v, kv.ModRevision, nil
}

// put returns the plan's put and the audit record of the change.
func (p *Plan) put(a audit.Actor, event, msg string) (store.Op, store.Op, error) {
	val, err := json.Marshal(p)
	if err != nil {
		return store.Op{}, store.Op{}, err
	}
	aud, err := a.Success(event, string(p.ID), msg)
	if err != nil {
		return store.Op{}, store.Op{}, err
	}
	return store.Put(p.key(), val), aud, nil
}

// Update changes a plan. An empty secret keeps the current one; a new one
// rotates this plan's secret only.
func (s *Service) Update(ctx context.Context, a audit.Actor, id PlanID, in PlanInput) (*Plan, error) {
	scope, err := s.validate(ctx, &in, false)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		p, rev, err := s.GetPlan(ctx, id)
		if err != nil {
			return nil, err
		}
		if p.Archived {
			return nil, fmt.Errorf("%w: %s", ErrArchived, id)
		}
		now := s.now()
		oldName := p.Name
		p.Name, p.Description, p.Endpoint, p.Enabled, p.Events = in.Name, in.Description, in.Endpoint, in.Enabled, scope
		p.AllowHTTP, p.TimeoutSeconds, p.MaxAttempts, p.UpdatedAt, p.UpdatedBy = in.AllowHTTP, in.TimeoutSeconds, in.MaxAttempts, now, by(a)
		msg := "updated"
		if in.Secret != "" {
			if p.SealedSecret, err = s.Keys.Seal([]byte(in.Secret), []byte(p.key())); err != nil {
				return nil, err
			}
			p.SecretUpdatedAt, msg = now, "updated; secret rotated"
		}
		put, aud, err := p.put(a, "webhook.subscription.updated", msg)
		if err != nil {
			return nil, err
		}
		cmps := []store.Compare{store.ModRevisionIs(p.key(), rev)}
		ops := []store.Op{put, aud}
		if nameKey(oldName) != nameKey(p.Name) {
			cmps = append(cmps, store.Absent(nameKey(p.Name)))
			ops = append(ops, store.Delete(nameKey(oldName)), store.Put(nameKey(p.Name), []byte(p.ID)))
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: cmps, Then: ops})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			s.kick()
			return p, nil
		}
		if owner, _, _ := store.Get(ctx, s.Store, nameKey(p.Name), store.Local); owner != nil && string(owner.Value) != string(p.ID) {
			return nil, fmt.Errorf("%w: %q", ErrNameTaken, p.Name)
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: plan %s", store.ErrContended, id)
}

// Archive ends a plan for good: it stops matching events, its Pending and
// WaitingRetry deliveries become Canceled, its history stays, and its name
// becomes free for a new plan.
func (s *Service) Archive(ctx context.Context, a audit.Actor, id PlanID) (*Plan, error) {
	var archived *Plan
	for attempt := 0; archived == nil; attempt++ {
		if attempt == 5 {
			return nil, fmt.Errorf("%w: plan %s", store.ErrContended, id)
		}
		p, rev, err := s.GetPlan(ctx, id)
		if err != nil {
			return nil, err
		}
		if p.Archived {
			return nil, fmt.Errorf("%w: %s", ErrArchived, id)
		}
		now := s.now()
		p.Archived, p.ArchivedAt, p.Enabled, p.UpdatedAt, p.UpdatedBy = true, &now, false, now, by(a)
		put, aud, err := p.put(a, "webhook.subscription.archived", p.Name)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(p.key(), rev)},
			Then: []store.Op{put, store.Delete(nameKey(p.Name)), aud}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			archived = p
		}
	}
	// The dispatcher claims a delivery only together with a compare on its
	// plan, so nothing of this plan is claimed from here on.
	if err := s.cancelOpen(ctx, archived.ID); err != nil {
		return nil, fmt.Errorf("plan archived, but canceling its deliveries failed (they will not be sent): %w", err)
	}
	return archived, nil
}

// cancelOpen moves the plan's Pending and WaitingRetry deliveries to
// Canceled, in batches, each delivery guarded by its mod revision.
func (s *Service) cancelOpen(ctx context.Context, id PlanID) error {
	for tries := 0; tries < 100; tries++ {
		open, err := queryDeliveries(ctx, s.Reader, []query.Cond{query.Eq("plan_id", string(id)), query.In("state", "Pending", "WaitingRetry")}, query.Asc(query.Key), 200)
		if err != nil || len(open) == 0 {
			return err
		}
		now := s.now()
		var req store.TxnRequest
		for _, d := range open {
			d.rec.State, d.rec.NextAttemptAt, d.rec.DueMs, d.rec.UpdatedAt = StateCanceled, nil, 0, now
			d.rec.ErrorSummary = bound("canceled: the delivery plan was archived")
			op, err := d.rec.put()
			if err != nil {
				return err
			}
			req.Compares = append(req.Compares, store.ModRevisionIs(d.key, d.modRev))
			req.Then = append(req.Then, op)
		}
		if _, err := s.Store.Txn(ctx, req); err != nil {
			return err
		}
	}
	return errors.New("deliveries kept changing while being canceled")
}

// ListPlans returns the plans, oldest first; archived ones only when asked.
func (s *Service) ListPlans(ctx context.Context, includeArchived bool) ([]Plan, error) {
	all, err := listPlans(ctx, s.Store)
	if err != nil {
		return nil, err
	}
	out := []Plan{}
	for _, p := range all {
		if includeArchived || !p.Archived {
			out = append(out, p.Plan)
		}
	}
	return out, nil
}

type planAt struct {
	Plan
	rev int64
	// created is the revision the plan was created at: only events
	// committed after it are delivered to it.
	created int64
}

func listPlans(ctx context.Context, st store.Store) ([]planAt, error) {
	resp, err := st.Range(ctx, PlanPrefix, store.RangeOptions{End: store.PrefixEnd(PlanPrefix)})
	if err != nil {
		return nil, err
	}
	out := make([]planAt, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		if p, err := store.Decode[Plan](kv); err == nil {
			out = append(out, planAt{Plan: p, rev: kv.ModRevision, created: kv.CreateRevision})
		}
	}
	return out, nil
}
