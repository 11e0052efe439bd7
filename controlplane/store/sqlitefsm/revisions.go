package sqlitefsm

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// Every writing Txn is one row of the revisions table: its revision (the
// rowid, so rows are appended at the end of the b-tree and SQLite's
// append fast path applies), the raft log index that made it, the hash
// chain value after it, and its changes, encoded below. One row per Txn
// instead of a history row per key and a separate hash row halves the
// pages a small Txn writes: a single put touches its kv leaf and the last
// revisions page, nothing else. The previous value of a changed key is not
// kept again: it is the value of the key's previous revision (prev mod),
// still in this table while retained.
//
// A change record is:
//
//	type      1 byte: 0 put, 1 delete
//	key       uvarint length, bytes
//	value     uvarint length, bytes (puts only)
//	create    uvarint: the key's create revision (of the deleted version for deletes)
//	version   uvarint: the key's version (of the deleted version for deletes)
//	prevMod   uvarint: mod revision of the version replaced or deleted, 0 if none
const (
	changePut    = 0
	changeDelete = 1
)

// appendChange encodes one change record onto b.
func appendChange(b []byte, typ byte, key string, value []byte, create, version, prevMod int64) []byte {
	b = append(b, typ)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	if typ == changePut {
		b = binary.AppendUvarint(b, uint64(len(value)))
		b = append(b, value...)
	}
	b = binary.AppendUvarint(b, uint64(create))
	b = binary.AppendUvarint(b, uint64(version))
	return binary.AppendUvarint(b, uint64(prevMod))
}

// change is one decoded change record.
type change struct {
	typ                      byte
	key                      string
	value                    []byte
	create, version, prevMod int64
}

var errBadChanges = errors.New("sqlitefsm: malformed change record")

// decodeChanges decodes the change records of one revision. Values alias b.
func decodeChanges(b []byte) ([]change, error) {
	var out []change
	uv := func() (int64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<62 {
			return 0, errBadChanges
		}
		b = b[n:]
		return int64(v), nil
	}
	for len(b) > 0 {
		var c change
		c.typ = b[0]
		b = b[1:]
		if c.typ != changePut && c.typ != changeDelete {
			return nil, errBadChanges
		}
		n, err := uv()
		if err != nil || n > int64(len(b)) {
			return nil, errBadChanges
		}
		c.key, b = string(b[:n]), b[n:]
		if c.typ == changePut {
			if n, err = uv(); err != nil || n > int64(len(b)) {
				return nil, errBadChanges
			}
			c.value, b = b[:n:n], b[n:]
		}
		if c.create, err = uv(); err != nil {
			return nil, err
		}
		if c.version, err = uv(); err != nil {
			return nil, err
		}
		if c.prevMod, err = uv(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// The history reads, prepared with the rest of the read path (readQueries).
const (
	selectCompactRevision = `SELECT num FROM meta WHERE name = '` + metaCompactRevision + `'`
	selectHistory         = `SELECT revision, changes FROM revisions WHERE revision >= ? AND revision <= ? AND changes IS NOT NULL ORDER BY revision`
	selectChangesAt       = `SELECT changes FROM revisions WHERE revision = ? AND changes IS NOT NULL`
)

// history returns the events of keys in [prefix, end) from revisions
// from..to, in order. A PrevKV carries the replaced version's revisions and,
// while its revision is retained, its value.
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
		rows, err := hist.QueryContext(ctx, from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		inRange := func(k string) bool { return k >= prefix && (end == "\x00" || k < end) }
		var needPrev []*store.KeyValue
		for rows.Next() {
			var rev int64
			var raw []byte
			if err := rows.Scan(&rev, &raw); err != nil {
				return err
			}
			changes, err := decodeChanges(raw)
			if err != nil {
				return fmt.Errorf("revision %d: %w", rev, err)
			}
			for _, c := range changes {
				if !inRange(c.key) {
					continue
				}
				ev := store.Event{KV: &store.KeyValue{Key: c.key, ModRevision: rev}}
				var prev *store.KeyValue
				if c.prevMod > 0 {
					prev = &store.KeyValue{Key: c.key, CreateRevision: c.create, ModRevision: c.prevMod, Version: c.version}
				}
				if c.typ == changePut {
					ev.KV.Value, ev.KV.CreateRevision, ev.KV.Version = c.value, c.create, c.version
					if prev != nil {
						prev.Version = c.version - 1
					}
				} else {
					ev.Type = store.EventDelete
				}
				if prev != nil && prev.ModRevision > comp {
					needPrev = append(needPrev, prev)
				}
				ev.PrevKV = prev
				events = append(events, ev)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return s.fillPrevValues(ctx, prep, needPrev)
	})
	return events, err
}

// fillPrevValues reads the values of replaced versions from their revisions.
func (s *State) fillPrevValues(ctx context.Context, prep prepareFunc, prevs []*store.KeyValue) error {
	if len(prevs) == 0 {
		return nil
	}
	st, err := prep(selectChangesAt)
	if err != nil {
		return err
	}
	byRev := map[int64][]change{}
	for _, p := range prevs {
		changes, ok := byRev[p.ModRevision]
		if !ok {
			var raw []byte
			err := st.QueryRowContext(ctx, p.ModRevision).Scan(&raw)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if changes, err = decodeChanges(raw); err != nil {
				return fmt.Errorf("revision %d: %w", p.ModRevision, err)
			}
			byRev[p.ModRevision] = changes
		}
		for _, c := range changes {
			if c.key == p.Key && c.typ == changePut {
				p.Value = c.value
			}
		}
	}
	return nil
}

// HashAt is the hash chain value after revision rev, or "" when that
// revision is no longer retained (or not reached).
func (s *State) HashAt(ctx context.Context, rev int64) (string, error) {
	var hash []byte
	err := s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		err := tx.QueryRowContext(ctx, `SELECT hash FROM revisions WHERE revision = ?`, rev).Scan(&hash)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return hex.EncodeToString(hash), err
}

// RetainedHistory counts the revisions at or below rev whose changes are
// still kept for watchers, and the oldest of them (0 when none).
func (s *State) RetainedHistory(ctx context.Context, rev int64) (count, oldest int64, err error) {
	err = s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		var o sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT count(*), min(revision) FROM revisions WHERE revision <= ? AND changes IS NOT NULL`, rev).Scan(&count, &o)
		oldest = o.Int64
		return err
	})
	return count, oldest, err
}

// migrateHistoryToRevisions is schema step 2: the per-key history rows and
// the revision hash rows of step 1 become one revisions row per Txn.
func migrateHistoryToRevisions(tx *sql.Tx) error {
	if _, err := tx.Exec(`INSERT INTO revisions (revision, log_index, hash, changes)
		SELECT revision, log_index, unhex(hash), NULL FROM revision_hashes`); err != nil {
		return err
	}
	rows, err := tx.Query(`SELECT revision, type, key, value, create_revision, version, prev_create, prev_mod, prev_version FROM history ORDER BY revision, seq`)
	if err != nil {
		return err
	}
	blobs := map[int64][]byte{}
	var order []int64
	for rows.Next() {
		var rev, typ, create, version, prevCreate, prevMod, prevVersion int64
		var key string
		var value []byte
		if err := rows.Scan(&rev, &typ, &key, &value, &create, &version, &prevCreate, &prevMod, &prevVersion); err != nil {
			rows.Close()
			return err
		}
		if _, ok := blobs[rev]; !ok {
			order = append(order, rev)
		}
		if typ == changeDelete {
			// Step 1 kept the deleted version in prev_*.
			blobs[rev] = appendChange(blobs[rev], changeDelete, key, nil, prevCreate, prevVersion, prevMod)
		} else {
			blobs[rev] = appendChange(blobs[rev], changePut, key, value, create, version, prevMod)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, rev := range order {
		if _, err := tx.Exec(`UPDATE revisions SET changes = ? WHERE revision = ?`, blobs[rev], rev); err != nil {
			return err
		}
	}
	for _, ddl := range []string{`DROP TABLE history`, `DROP TABLE revision_hashes`} {
		if _, err := tx.Exec(ddl); err != nil {
			return err
		}
	}
	return nil
}
