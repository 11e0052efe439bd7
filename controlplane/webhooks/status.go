package webhooks

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// Status is the aggregate of plans and deliveries.
type Status struct {
	ActivePlans, EnabledPlans, ArchivedPlans int
	Deliveries                               map[State]int64
	// OldestOpenAt is when the oldest Pending or WaitingRetry delivery was
	// created; NextRetryAt when the next WaitingRetry is due.
	OldestOpenAt, NextRetryAt *time.Time
	FanoutRevision            int64
	StoreRevision             int64
}

// Status counts plans and deliveries by state from this node's state.
func (s *Service) Status(ctx context.Context) (Status, error) {
	st := Status{Deliveries: map[State]int64{}}
	for _, state := range AllStates {
		st.Deliveries[state] = 0
	}
	plans, err := listPlans(ctx, s.Store)
	if err != nil {
		return st, err
	}
	for _, p := range plans {
		switch {
		case p.Archived:
			st.ArchivedPlans++
		case p.Enabled:
			st.ActivePlans++
			st.EnabledPlans++
		default:
			st.ActivePlans++
		}
	}
	err = s.Reader.View(ctx, func(v query.View) error {
		st.StoreRevision = v.Revision()
		by, err := v.CountBy(DeliveryIndex.Name, "state")
		for state, n := range by {
			st.Deliveries[State(state)] = n
		}
		return err
	})
	if err != nil {
		return st, err
	}
	if open, err := queryDeliveries(ctx, s.Reader, []query.Cond{query.In("state", "Pending", "WaitingRetry")}, query.Asc(query.Key), 1); err == nil && len(open) > 0 {
		t := open[0].rec.CreatedAt
		st.OldestOpenAt = &t
	}
	if next, err := queryDeliveries(ctx, s.Reader, []query.Cond{query.Eq("state", "WaitingRetry")}, query.Asc("due_ms"), 1); err == nil && len(next) > 0 {
		t := time.UnixMilli(next[0].rec.DueMs).UTC()
		st.NextRetryAt = &t
	}
	st.FanoutRevision, _, err = readCursor(ctx, s.Store)
	return st, err
}
