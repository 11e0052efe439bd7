package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// Retention bounds the outbox: delivered entries older than MaxAge, and the
// oldest delivered ones beyond MaxEntries, are removed together with their
// deliveries. An entry counts as delivered once it was fanned out and none
// of its deliveries is Pending, Delivering or WaitingRetry; Failed ones
// are settled too (an operator retry after that answers 404).
type Retention struct {
	MaxAge     time.Duration
	MaxEntries int
}

// PruneOutbox removes up to batch delivered entries that retention no
// longer keeps and returns how many it removed.
func (s *Service) PruneOutbox(ctx context.Context, r Retention, batch int) (int64, error) {
	cur, _, err := readCursor(ctx, s.Store)
	if err != nil {
		return 0, err
	}
	cutoff := events.KeyBefore(events.OutboxPrefix, s.now().Add(-r.MaxAge))
	outbox := events.OutboxIndex.Table()
	var keys, deliveries []string
	var revs []int64
	err = s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		var total int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+outbox).Scan(&total); err != nil {
			return err
		}
		bound := cutoff
		if excess := total - int64(r.MaxEntries); excess > 0 {
			var k string
			err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT key FROM %s ORDER BY key LIMIT 1 OFFSET %d", outbox, excess)).Scan(&k)
			if err == nil && k > bound {
				bound = k
			}
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT o.key, kv.mod_revision FROM %s o JOIN kv ON kv.key = o.key
			WHERE o.key < ? AND (kv.create_revision <= ? OR o.target IS NOT NULL)
			AND NOT EXISTS (SELECT 1 FROM %s d WHERE d.event_id = substr(o.key, ?) AND d.state IN ('Pending','Delivering','WaitingRetry'))
			ORDER BY o.key LIMIT ?`, outbox, DeliveryIndex.Table()), bound, cur, len(events.OutboxPrefix)+1, batch)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var rev int64
			if err := rows.Scan(&k, &rev); err != nil {
				return err
			}
			keys, revs = append(keys, k), append(revs, rev)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, k := range keys {
			drows, err := tx.QueryContext(ctx, "SELECT key FROM "+DeliveryIndex.Table()+" WHERE event_id = ?", k[len(events.OutboxPrefix):])
			if err != nil {
				return err
			}
			for drows.Next() {
				var dk string
				if err := drows.Scan(&dk); err != nil {
					drows.Close()
					return err
				}
				deliveries = append(deliveries, dk)
			}
			drows.Close()
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	var req store.TxnRequest
	for i, k := range keys {
		req.Compares = append(req.Compares, store.ModRevisionIs(k, revs[i]))
		req.Then = append(req.Then, store.Delete(k))
	}
	for _, dk := range deliveries {
		req.Then = append(req.Then, store.Delete(dk))
	}
	resp, err := s.Store.Txn(ctx, req)
	if err != nil || !resp.Succeeded {
		return 0, err
	}
	return int64(len(keys)), nil
}
