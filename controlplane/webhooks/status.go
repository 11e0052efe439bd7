package webhooks

import (
	"context"
	"database/sql"
	"time"
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
	err = s.Reader.ReadTx(ctx, func(tx *sql.Tx, rev int64) error {
		st.StoreRevision = rev
		rows, err := tx.QueryContext(ctx, "SELECT state, count(*) FROM "+DeliveryIndex.Table()+" GROUP BY state")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var state string
			var n int64
			if err := rows.Scan(&state, &n); err != nil {
				return err
			}
			st.Deliveries[State(state)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return st, err
	}
	if open, err := queryDeliveries(ctx, s.Reader, "i.state IN ('Pending','WaitingRetry')", nil, "i.key", 1); err == nil && len(open) > 0 {
		t := open[0].rec.CreatedAt
		st.OldestOpenAt = &t
	}
	if next, err := queryDeliveries(ctx, s.Reader, "i.state = 'WaitingRetry'", nil, "i.due_ms", 1); err == nil && len(next) > 0 {
		t := time.UnixMilli(next[0].rec.DueMs).UTC()
		st.NextRetryAt = &t
	}
	st.FanoutRevision, _, err = readCursor(ctx, s.Store)
	return st, err
}
