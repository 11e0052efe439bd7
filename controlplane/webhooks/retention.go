package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
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

// targeted reports whether an outbox entry is addressed to one plan.
func targeted(value []byte) bool {
	var e struct {
		Target *string `json:"targetSubscriptionId"`
	}
	return json.Unmarshal(value, &e) == nil && e.Target != nil
}

// PruneOutbox removes up to batch delivered entries that retention no
// longer keeps and returns how many it removed.
func (s *Service) PruneOutbox(ctx context.Context, r Retention, batch int) (int64, error) {
	cur, _, err := readCursor(ctx, s.Store)
	if err != nil {
		return 0, err
	}
	cutoff := events.KeyBefore(events.OutboxPrefix, s.now().Add(-r.MaxAge))
	outbox := events.OutboxIndex.Name
	var keys, deliveries []string
	var revs []int64
	err = s.Reader.View(ctx, func(v query.View) error {
		total, err := v.Count(outbox)
		if err != nil {
			return err
		}
		bound := cutoff
		if excess := total - int64(r.MaxEntries); excess > 0 {
			k, err := v.Keys(query.Query{Index: outbox, Order: []query.Order{query.Asc(query.Key)}, Limit: 1, Offset: int(excess)})
			if err != nil {
				return err
			}
			if len(k) == 1 && k[0] > bound {
				bound = k[0]
			}
		}
		// Old entries, oldest first, that the dispatcher has read past (or
		// that target one plan) and that no delivery still needs.
		after := ""
		for len(keys) < batch {
			page, err := v.Find(query.Query{Index: outbox, Where: []query.Cond{query.Lt(query.Key, bound), query.Gt(query.Key, after)},
				Order: []query.Order{query.Asc(query.Key)}, Limit: batch})
			if err != nil || len(page) == 0 {
				return err
			}
			// One query for the page's open deliveries and one for the
			// deliveries of the entries that go, instead of two per entry.
			var candidates []query.Row
			var ids []string
			for _, row := range page {
				after = row.Key
				if row.CreateRevision > cur && !targeted(row.Value) {
					continue
				}
				candidates, ids = append(candidates, row), append(ids, row.Key[len(events.OutboxPrefix):])
			}
			if len(ids) == 0 {
				continue
			}
			open, err := v.Distinct(DeliveryIndex.Name, []string{"event_id"}, query.In("event_id", ids...), query.In("state", "Pending", "Delivering", "WaitingRetry"))
			if err != nil {
				return err
			}
			busy := make(map[string]bool, len(open))
			for _, t := range open {
				busy[t[0]] = true
			}
			var settled []string
			for i, row := range candidates {
				if busy[ids[i]] {
					continue
				}
				keys, revs, settled = append(keys, row.Key), append(revs, row.ModRevision), append(settled, ids[i])
				if len(keys) == batch {
					break
				}
			}
			if len(settled) > 0 {
				done, err := v.Keys(query.Query{Index: DeliveryIndex.Name, Where: []query.Cond{query.In("event_id", settled...)}})
				if err != nil {
					return err
				}
				deliveries = append(deliveries, done...)
			}
			if len(keys) == batch {
				return nil
			}
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
