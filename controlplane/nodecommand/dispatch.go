package nodecommand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
)

// pendingRow is a Pending command found through the index, with the mod
// revision its claim compares.
type pendingRow struct {
	key string
	rev int64
	rec *Record
}

func (s *Service) pending(ctx context.Context, nodeID string, limit int) ([]pendingRow, error) {
	return s.rows(ctx, query.Query{Index: Index.Name, Where: []query.Cond{query.Eq("node_id", nodeID), query.Eq("status", Pending)},
		Order: []query.Order{query.Asc("created_ms")}, Limit: limit})
}

// rows reads the commands q selects with the mod revisions a change
// compares.
func (s *Service) rows(ctx context.Context, q query.Query) ([]pendingRow, error) {
	var out []pendingRow
	err := s.Reader.View(ctx, func(v query.View) error {
		rows, err := v.Find(q)
		for _, row := range rows {
			r, err := query.JSON[Record](row)
			if err != nil {
				return err
			}
			out = append(out, pendingRow{key: row.Key, rev: row.ModRevision, rec: &r})
		}
		return err
	})
	return out, err
}

// dispatch hands rows to the node's agent in one Txn comparing each row's
// mod revision; ok is false (with the revision to wait for) when another
// writer changed one of them first.
func (s *Service) dispatch(ctx context.Context, rows []pendingRow) (out []*Record, ok bool, rev int64, err error) {
	now := s.now()
	req := store.TxnRequest{}
	for _, p := range rows {
		r := p.rec
		if r.Status != Pending || !now.Before(r.ExpiresAt) {
			continue // the reaper times out an expired one
		}
		r.Attempt++
		r.DispatchedAt, r.DispatchedVia = &now, s.LocalNodeID
		r.hold(now.Add(r.Visibility))
		r.transition(Dispatched, now, s.LocalNodeID, "")
		val, err := json.Marshal(r)
		if err != nil {
			return nil, false, 0, err
		}
		req.Compares = append(req.Compares, store.ModRevisionIs(p.key, p.rev))
		req.Then = append(req.Then, store.Put(p.key, val))
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, true, 0, nil
	}
	resp, err := s.Store.Txn(ctx, req)
	if err != nil {
		return nil, false, 0, err
	}
	if !resp.Succeeded {
		return nil, false, resp.Header.Revision, nil
	}
	return out, true, 0, nil
}

// claim moves up to max Pending commands of a node, found through the
// index, to Dispatched. When another control node claimed one of them
// first, the claim is retried on fresh state.
func (s *Service) claim(ctx context.Context, nodeID string, limit int) ([]*Record, error) {
	for attempt := 0; attempt < 5; attempt++ {
		rows, err := s.pending(ctx, nodeID, limit)
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		out, ok, rev, err := s.dispatch(ctx, rows)
		if err != nil || ok {
			return out, err
		}
		if err := s.Store.WaitForRevision(ctx, rev); err != nil {
			return nil, err
		}
	}
	s.h().unsure(nodeID)
	return nil, nil
}

// claimQueued claims the Pending commands the watch delivered for a node
// that was clean, without reading the store; ok is false when one changed
// meanwhile, and the caller then looks at the store.
func (s *Service) claimQueued(ctx context.Context, kvs []*store.KeyValue) ([]*Record, bool, error) {
	rows := make([]pendingRow, 0, len(kvs))
	for _, kv := range kvs {
		r, err := decode(kv)
		if err != nil {
			return nil, false, err
		}
		rows = append(rows, pendingRow{key: kv.Key, rev: kv.ModRevision, rec: r})
	}
	out, ok, _, err := s.dispatch(ctx, rows)
	return out, ok, err
}

// Poll hands the node's Pending commands to its agent, waiting up to wait
// for one to appear. A claim whose response cannot be delivered stays
// Dispatched until its deadline, then is handed out again.
func (s *Service) Poll(ctx context.Context, nodeID string, wait time.Duration, limit int) ([]agentapi.Command, error) {
	if limit <= 0 || limit > 64 {
		limit = 16
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Take the wake-up channel before looking, so a command created
		// between the look and the wait is not missed.
		woken := s.h().nodeSignal(nodeID)
		var recs []*Record
		var err error
		if s.h().mayHavePending(nodeID) {
			recs, err = s.claim(ctx, nodeID, limit)
			if len(recs) == limit {
				s.h().unsure(nodeID)
			}
		} else if kvs := s.h().popQueue(nodeID, limit); len(kvs) > 0 {
			var ok bool
			if recs, ok, err = s.claimQueued(ctx, kvs); err == nil && !ok {
				s.h().unsure(nodeID)
				continue
			}
		}
		if err != nil {
			s.h().unsure(nodeID)
			return nil, err
		}
		if len(recs) > 0 {
			out := make([]agentapi.Command, len(recs))
			for i, r := range recs {
				out[i] = agentapi.Command{CommandID: r.CommandID, Type: r.CommandType, Payload: r.Payload, IdempotencyKey: r.agentKey(),
					Attempt: r.Attempt, VisibleUntil: *r.VisibleUntil, ExpiresAt: r.ExpiresAt}
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-woken:
		}
	}
}

// Running records the agent's acknowledgement and extends the deadline.
// The answer tells a running agent when the command was canceled.
func (s *Service) Running(ctx context.Context, nodeID string, ack agentapi.CommandRunning) (agentapi.CommandRunningResponse, error) {
	var out agentapi.CommandRunningResponse
	_, err := s.change(ctx, ack.CommandID, func(r *Record) error {
		if r.NodeID != nodeID {
			return fmt.Errorf("%w: %s belongs to another node", ErrNotHeld, ack.CommandID)
		}
		if r.Status == Canceled {
			out.Canceled = true
			return errUnchanged
		}
		if Terminal(r.Status) || r.Status == Pending {
			return fmt.Errorf("%w: %s is %s", ErrNotHeld, ack.CommandID, r.Status)
		}
		now := s.now()
		if r.Status == Dispatched {
			started := ack.StartedAt.UTC()
			if started.IsZero() || started.After(now) {
				started = now
			}
			r.StartedAt = &started
			r.transition(Running, now, s.LocalNodeID, "")
		}
		r.hold(now.Add(r.Visibility))
		out.VisibleUntil = *r.VisibleUntil
		return nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return out, err
}

// errUnchanged ends a change without writing.
var errUnchanged = errors.New("unchanged")

// Complete stores a command's outcome. A result is accepted while the
// command has not ended, whichever delivery it comes from: all deliveries
// are the same command. A command that already ended refuses it with
// ErrNotHeld, which tells the agent to stop reporting.
func (s *Service) Complete(ctx context.Context, nodeID string, res agentapi.CommandResult) (*Record, error) {
	if len(res.Result) > MaxResultBytes {
		return nil, fmt.Errorf("%w: result is larger than %d bytes", ErrInvalid, MaxResultBytes)
	}
	if !res.Succeeded && res.Error == nil {
		return nil, fmt.Errorf("%w: a failed result needs an error", ErrInvalid)
	}
	return s.change(ctx, res.CommandID, func(r *Record) error {
		if r.NodeID != nodeID {
			return fmt.Errorf("%w: %s belongs to another node", ErrNotHeld, res.CommandID)
		}
		if Terminal(r.Status) {
			return fmt.Errorf("%w: %s is already %s", ErrNotHeld, res.CommandID, r.Status)
		}
		now := s.now()
		started := res.StartedAt.UTC()
		if started.IsZero() || started.After(now) {
			started = now
		}
		if r.Status != Running {
			// A command that finished before its acknowledgement went out
			// passes through Running in the same write.
			r.StartedAt = &started
			r.transition(Running, started, s.LocalNodeID, "")
		}
		r.finish(now)
		r.Replayed = res.Replayed
		if res.Succeeded {
			r.Result, r.Error = res.Result, nil
			r.transition(Succeeded, now, s.LocalNodeID, "")
			return nil
		}
		r.Result = res.Result
		r.Error = &Error{Code: res.Error.Code, Message: truncate(res.Error.Message, 2048)}
		r.transition(Failed, now, s.LocalNodeID, r.Error.Code)
		return nil
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Wait blocks until the command ends or ctx does, and returns its latest
// record either way. Changes arrive with the hub's signal, so the record is
// read from the store only once.
func (s *Service) Wait(ctx context.Context, id string) (*Record, error) {
	h := s.h()
	w := h.commandSignal(id)
	defer h.forget(id, w)
	kv, _, err := store.Get(ctx, s.Store, recordKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	r, err := decode(kv)
	if err != nil {
		return nil, err
	}
	return s.follow(ctx, id, w, r, kv.ModRevision)
}

// follow waits on a registered waiter from the record r at revision rev
// until the command ends or ctx does.
func (s *Service) follow(ctx context.Context, id string, w *waiter, r *Record, rev int64) (*Record, error) {
	h := s.h()
	for {
		ch, latest := h.current(w)
		if latest != nil && latest.ModRevision > rev {
			next, err := decode(latest)
			if err != nil {
				return r, err
			}
			r, rev = next, latest.ModRevision
		}
		if Terminal(r.Status) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-ch:
		}
		if _, latest := h.current(w); latest == nil {
			// The watch lost its place: read the record.
			kv, _, err := store.Get(ctx, s.Store, recordKey(id), store.Local)
			if err != nil || kv == nil {
				return r, err
			}
			if r, err = decode(kv); err != nil {
				return nil, err
			}
			rev = kv.ModRevision
		}
	}
}

// CreateAndWait creates a command and waits up to wait for it to end. The
// waiter is in place before the command exists, so no change is missed
// and the new record is never read back.
func (s *Service) CreateAndWait(ctx context.Context, req CreateRequest, wait time.Duration) (*Record, bool, error) {
	if wait <= 0 {
		return s.Create(ctx, req)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, err
	}
	h := s.h()
	w := h.commandSignal(id.String())
	defer h.forget(id.String(), w)
	rec, created, err := s.create(ctx, req, id)
	if err != nil {
		return nil, false, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !created {
		rec, err = s.Wait(wctx, rec.CommandID)
		return rec, false, err
	}
	rec, err = s.follow(wctx, id.String(), w, rec, 0)
	return rec, true, err
}
