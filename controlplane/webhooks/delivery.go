package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// DeliveryPrefix holds one record per plan and event.
const DeliveryPrefix = "/webhooks/deliveries/"

// DeliveryID identifies a delivery. It is derived from the event and the
// plan, so fanning an event out twice cannot create two deliveries, and it
// starts with the event id's time bits, so key order is event time order.
type DeliveryID string

// State of a delivery (contract A, "States and transitions").
type State string

const (
	StatePending      State = "Pending"
	StateDelivering   State = "Delivering"
	StateCompleted    State = "Completed"
	StateWaitingRetry State = "WaitingRetry"
	StateFailed       State = "Failed"
	StateCanceled     State = "Canceled"
)

// AllStates in the contract's order.
var AllStates = []State{StatePending, StateDelivering, StateCompleted, StateWaitingRetry, StateFailed, StateCanceled}

// DeliveryIndex is the typed index of deliveries: per-plan history, the
// dispatcher's due query and the retention check use it.
var DeliveryIndex = query.Index{Name: "webhook_delivery", Prefix: DeliveryPrefix, Columns: []query.Column{
	{Name: "plan_id", Type: "TEXT", Path: "$.subscriptionId"},
	{Name: "event_id", Type: "TEXT", Path: "$.eventId"},
	{Name: "state", Type: "TEXT", Path: "$.state"},
	{Name: "due_ms", Type: "INTEGER", Path: "$.dueMs"},
	{Name: "test", Type: "INTEGER", Path: "$.test"},
	{Name: "plan_due", Type: "TEXT", Path: "$.planDue"},
}}

// maxErrorSummary bounds the error text kept per delivery.
const maxErrorSummary = 512

// attemptLogSize is how many recent attempts a delivery remembers.
const attemptLogSize = 10

// Delivery is one event for one plan.
type Delivery struct {
	ID             DeliveryID `json:"id"`
	SubscriptionID PlanID     `json:"subscriptionId"`
	EventID        string     `json:"eventId"`
	EventName      string     `json:"eventName"`
	// Test marks the operator's test event, sent even while the plan is
	// disabled.
	Test           bool       `json:"test,omitempty"`
	State          State      `json:"state"`
	Attempts       int        `json:"attempts"`
	LastHTTPStatus *int       `json:"lastHttpStatus"`
	ErrorSummary   string     `json:"errorSummary"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	LastAttemptAt  *time.Time `json:"lastAttemptAt,omitempty"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt,omitempty"`
	// DueMs orders the due query: when a Pending or WaitingRetry delivery
	// may be claimed, in Unix milliseconds. It is absent (NULL in the
	// index) in every other state, so the index on it holds only the
	// deliveries that wait, and the due query never walks finished ones.
	DueMs int64 `json:"dueMs,omitempty"`
	// PlanDue is "<plan id>/<DueMs, 16 digits>" while DueMs is set: its
	// index gives each plan's due deliveries in order with a range scan, so
	// the claim loop reads only what it can take, however long a plan's
	// queue. put keeps it in step with DueMs.
	PlanDue string `json:"planDue,omitempty"`
	// RoundStart is Attempts when the operator last retried: automatic
	// retries end when Attempts-RoundStart reaches the plan's maximum.
	RoundStart int `json:"roundStart,omitempty"`
	// Claim names the dispatcher session that holds a Delivering delivery.
	Claim *Claim `json:"claim,omitempty"`
	// Log keeps the last few attempts.
	Log []Attempt `json:"log,omitempty"`
}

// Claim is who is delivering.
type Claim struct {
	NodeID  string    `json:"nodeId"`
	Session string    `json:"session"`
	At      time.Time `json:"at"`
}

// Attempt is one HTTP POST of a delivery.
type Attempt struct {
	At         time.Time `json:"at"`
	HTTPStatus int       `json:"httpStatus,omitempty"`
	DurationMs int64     `json:"durationMs"`
	Error      string    `json:"error,omitempty"`
}

// NewDeliveryID derives the delivery id of an event for a plan.
func NewDeliveryID(eventID string, plan PlanID) DeliveryID {
	var id uuid.UUID
	if ev, err := uuid.Parse(eventID); err == nil {
		copy(id[:6], ev[:6])
	}
	h := sha256.Sum256([]byte(eventID + "|" + string(plan)))
	copy(id[6:], h[:10])
	id[6] = (id[6] & 0x0f) | 0x80 // version 8: custom, time-ordered
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 9562 variant
	return DeliveryID(id.String())
}

// planDue is the PlanDue value (and range bound) of a plan at a time.
func planDue(plan PlanID, ms int64) string { return fmt.Sprintf("%s/%016d", plan, ms) }

func deliveryKey(id DeliveryID) string { return DeliveryPrefix + string(id) }

func newDelivery(ev events.Entry, plan PlanID, now time.Time, test bool) Delivery {
	return Delivery{ID: NewDeliveryID(ev.EventID, plan), SubscriptionID: plan, EventID: ev.EventID, EventName: ev.EventName,
		Test: test, State: StatePending, CreatedAt: now, UpdatedAt: now, DueMs: now.UnixMilli()}
}

func (d *Delivery) put() (store.Op, error) {
	d.PlanDue = ""
	if d.DueMs > 0 {
		d.PlanDue = planDue(d.SubscriptionID, d.DueMs)
	}
	val, err := json.Marshal(d)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(deliveryKey(d.ID), val), nil
}

// bound cuts an error summary to maxErrorSummary bytes on a rune boundary
// and removes control characters, so receiver answers cannot inject lines
// into what operators read.
func bound(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxErrorSummary {
		return s
	}
	cut := maxErrorSummary - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// storedDelivery is a delivery with its key and mod revision.
type storedDelivery struct {
	key    string
	modRev int64
	rec    Delivery
	// event is the raw outbox entry, loaded when the delivery is claimed;
	// nil when the event is gone.
	event []byte
}

// queryDeliveries reads deliveries through the index.
func queryDeliveries(ctx context.Context, r query.Reader, where []query.Cond, order query.Order, limit int) ([]storedDelivery, error) {
	var out []storedDelivery
	err := r.View(ctx, func(v query.View) error {
		rows, err := v.Find(query.Query{Index: DeliveryIndex.Name, Where: where, Order: []query.Order{order}, Limit: limit})
		for _, row := range rows {
			if rec, err := query.JSON[Delivery](row); err == nil {
				out = append(out, storedDelivery{key: row.Key, modRev: row.ModRevision, rec: rec})
			}
		}
		return err
	})
	return out, err
}

// DeliveryQuery filters the per-plan history.
type DeliveryQuery struct {
	Plan           PlanID
	State          State
	Page, PageSize int
}

// ListDeliveries returns one page of a plan's deliveries, newest event
// first, and the total.
func (s *Service) ListDeliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, int64, error) {
	if _, _, err := s.GetPlan(ctx, q.Plan); err != nil {
		return nil, 0, err
	}
	where := query.Where{query.Eq("plan_id", string(q.Plan))}
	where.EqIfSet("state", string(q.State))
	return query.Page(ctx, s.Reader, query.Query{Index: DeliveryIndex.Name, Where: where, Order: []query.Order{query.Desc(query.Key)}},
		q.Page, q.PageSize, query.JSON[Delivery])
}

// GetDelivery reads one delivery.
func (s *Service) GetDelivery(ctx context.Context, id DeliveryID) (*Delivery, int64, error) {
	return getRecord[Delivery](ctx, s.Store, DeliveryPrefix, string(id), "delivery")
}

// reopen turns a Failed delivery back to Pending with a new round of
// attempts (the operator's retry).
func (d *Delivery) reopen(now time.Time) {
	d.State, d.RoundStart, d.NextAttemptAt, d.DueMs, d.UpdatedAt = StatePending, d.Attempts, nil, now.UnixMilli(), now
}

// Retry is the operator's retry of one Failed delivery: Failed -> Pending.
func (s *Service) Retry(ctx context.Context, a audit.Actor, id DeliveryID) (*Delivery, error) {
	for attempt := 0; attempt < 5; attempt++ {
		d, rev, err := s.GetDelivery(ctx, id)
		if err != nil {
			return nil, err
		}
		if d.State != StateFailed {
			return nil, fmt.Errorf("%w: delivery %s is %s; only Failed deliveries can be retried", ErrNotRetryable, id, d.State)
		}
		p, prev, err := s.GetPlan(ctx, d.SubscriptionID)
		if err != nil {
			return nil, err
		}
		if p.Archived {
			return nil, fmt.Errorf("%w: its plan %s", ErrArchived, p.ID)
		}
		d.reopen(s.now())
		op, err := d.put()
		if err != nil {
			return nil, err
		}
		aud, err := a.Success("webhook.delivery.retried", string(id), d.EventName)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(deliveryKey(id), rev), store.ModRevisionIs(p.key(), prev)},
			Then: []store.Op{op, aud}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			s.kick()
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w: delivery %s", store.ErrContended, id)
}

// RetryEvent is the operator's retry of an outbox event: every Failed
// delivery of it goes back to Pending, each for its own plan.
func (s *Service) RetryEvent(ctx context.Context, a audit.Actor, eventID string) ([]Delivery, error) {
	if _, err := events.Get(ctx, s.Store, eventID); err != nil {
		if errorsIsNotFound(err) {
			return nil, fmt.Errorf("%w: event %q", ErrNotFound, eventID)
		}
		return nil, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		failed, err := queryDeliveries(ctx, s.Reader, []query.Cond{query.Eq("event_id", eventID), query.Eq("state", "Failed")}, query.Asc(query.Key), 1000)
		if err != nil {
			return nil, err
		}
		plans, err := listPlans(ctx, s.Store)
		if err != nil {
			return nil, err
		}
		byID := map[PlanID]planAt{}
		for _, p := range plans {
			byID[p.ID] = p
		}
		var req store.TxnRequest
		var out []Delivery
		now := s.now()
		for _, d := range failed {
			p, ok := byID[d.rec.SubscriptionID]
			if !ok || p.Archived {
				continue
			}
			d.rec.reopen(now)
			op, err := d.rec.put()
			if err != nil {
				return nil, err
			}
			req.Compares = append(req.Compares, store.ModRevisionIs(d.key, d.modRev), store.ModRevisionIs(p.key(), p.rev))
			req.Then = append(req.Then, op)
			out = append(out, d.rec)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: event %s has no Failed delivery of an active plan", ErrNotRetryable, eventID)
		}
		aud, err := a.Success("webhook.event.retried", eventID, fmt.Sprintf("%d deliveries", len(out)))
		if err != nil {
			return nil, err
		}
		req.Then = append(req.Then, aud)
		resp, err := s.Store.Txn(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			s.kick()
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: event %s", store.ErrContended, eventID)
}

// Test writes a system.webhook.test event targeted at one plan, with its
// delivery, in one Txn: it skips the plan's event scope but then travels
// the real path (claim, signature, timeout, retries).
func (s *Service) Test(ctx context.Context, a audit.Actor, id PlanID, message string) (events.Entry, Delivery, error) {
	if utf8.RuneCountInString(message) > 512 {
		return events.Entry{}, Delivery{}, fmt.Errorf("%w: message must be at most 512 characters", ErrInvalid)
	}
	if message == "" {
		message = "test event from the platform"
	}
	p, rev, err := s.GetPlan(ctx, id)
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	if p.Archived {
		return events.Entry{}, Delivery{}, fmt.Errorf("%w: %s", ErrArchived, id)
	}
	now := s.now()
	data := map[string]string{"actor": by(a), "message": message, "testedAtUtc": now.Format(time.RFC3339Nano)}
	env, err := events.New(events.SystemWebhookTest, events.SourceWebhookTest, s.NodeID, data)
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	env.OccurredAtUTC = now
	entry := events.Entry{Envelope: env, TargetSubscriptionID: string(id)}
	evOp, err := events.EntryOp(entry)
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	d := newDelivery(entry, id, now, true)
	dOp, err := d.put()
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	aud, err := a.Success("webhook.subscription.tested", string(id), env.EventID)
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(p.key(), rev)}, Then: []store.Op{evOp, dOp, aud}})
	if err != nil {
		return events.Entry{}, Delivery{}, err
	}
	if !resp.Succeeded {
		return events.Entry{}, Delivery{}, fmt.Errorf("%w: plan %s changed meanwhile; try again", store.ErrContended, id)
	}
	s.kick()
	return entry, d, nil
}
