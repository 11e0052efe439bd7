package sqlitefsm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
)

// watchWindow bounds how many revisions one history query covers, so a
// watcher far behind catches up in bounded steps.
const watchWindow = 512

// Watch streams the changes of keys under prefix from revision from
// (0 = the next revision). History at or below the compaction point is gone;
// asking for it yields store.ErrCompacted.
func (s *State) Watch(ctx context.Context, prefix string, from int64) <-chan store.WatchResponse {
	out := make(chan store.WatchResponse, 16)
	s.watchers.Add(1)
	// "From now" is the revision at the call, not whenever the goroutine
	// first runs: a change applied in between must not be missed.
	next := from
	if next <= 0 {
		next = s.Revision() + 1
	}
	go func() {
		defer close(out)
		defer s.watchers.Add(-1)
		end := store.PrefixEnd(prefix)
		// A prefix inside one area can tell from the area's revision that
		// nothing under it changed, and skip reading the history.
		oneArea := strings.Count(area(prefix), "/") == 3 && strings.HasPrefix(prefix, area(prefix))
		for {
			ch := s.changed()
			if comp := s.CompactRevision(); next <= comp {
				select {
				case out <- store.WatchResponse{CompactRevision: comp, Err: fmt.Errorf("%w: revision %d (compacted up to %d)", store.ErrCompacted, next, comp)}:
				case <-ctx.Done():
				}
				return
			}
			cur := s.Revision()
			if oneArea && next <= cur && s.AreaRevision(prefix) < next {
				next = cur + 1 // areas are marked before the revision moves
			}
			for next <= cur {
				upto := min(next+watchWindow-1, cur)
				events, err := s.history(ctx, prefix, end, next, upto)
				if err != nil {
					if ctx.Err() == nil {
						select {
						case out <- store.WatchResponse{Err: err}:
						case <-ctx.Done():
						}
					}
					return
				}
				if len(events) > 0 {
					select {
					case out <- store.WatchResponse{Events: events}:
					case <-ctx.Done():
						return
					}
				}
				next = upto + 1
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// The history reads, prepared with the rest of the read path (readQueries).
const (
	selectCompactRevision = `SELECT num FROM meta WHERE name = '` + metaCompactRevision + `'`
	selectHistory         = `SELECT revision, type, key, value, create_revision, version, prev_value, prev_create, prev_mod, prev_version
			FROM history WHERE revision >= ? AND revision <= ? AND key >= ? AND key < ? ORDER BY revision, seq`
)

func (s *State) history(ctx context.Context, prefix, end string, from, to int64) ([]store.Event, error) {
	var events []store.Event
	err := s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		prep := txStmt(ctx, tx, s.rq)
		// Compaction may have run since the caller checked; within this
		// read transaction the answer is final.
		compact, err := prep(selectCompactRevision)
		if err != nil {
			return err
		}
		var comp int64
		if err := compact.QueryRowContext(ctx).Scan(&comp); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if from <= comp {
			return fmt.Errorf("%w: revision %d (compacted up to %d)", store.ErrCompacted, from, comp)
		}
		hist, err := prep(selectHistory)
		if err != nil {
			return err
		}
		rows, err := hist.QueryContext(ctx, from, to, prefix, end)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ev store.Event
			kv := &store.KeyValue{}
			prev := &store.KeyValue{}
			if err := rows.Scan(&kv.ModRevision, &ev.Type, &kv.Key, &kv.Value, &kv.CreateRevision, &kv.Version,
				&prev.Value, &prev.CreateRevision, &prev.ModRevision, &prev.Version); err != nil {
				return err
			}
			ev.KV = kv
			if prev.ModRevision > 0 {
				prev.Key = kv.Key
				ev.PrevKV = prev
			}
			events = append(events, ev)
		}
		return rows.Err()
	})
	return events, err
}
