package sqlitefsm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svcplatform/svc/controlplane/store"
)

// CommandKind names a replicated command. Values are append-only: a kind
// once written to a log must be understood by every later version.
type CommandKind uint8

const (
	// CommandTxn applies a store.TxnRequest.
	CommandTxn CommandKind = 1
	// CommandCompact removes watch history and revision hashes at or below a
	// revision.
	CommandCompact CommandKind = 2
)

// Command is the payload of one raft log entry.
type Command struct {
	Kind    CommandKind       `json:"k"`
	Txn     *store.TxnRequest `json:"t,omitempty"`
	Compact *CompactRequest   `json:"c,omitempty"`
}

// CompactRequest asks every replica to drop history up to Revision.
type CompactRequest struct {
	Revision int64 `json:"revision"`
}

// CompactResult reports what a compaction removed on this replica:
// HistoryRows counts the revisions whose changes went, RevisionHashes the
// revisions whose hash went too (all but the compaction point).
type CompactResult struct {
	Revision       int64 `json:"revision"`
	HistoryRows    int64 `json:"historyRows"`
	RevisionHashes int64 `json:"revisionHashes"`
}

// Encode serialises a command for the log.
func (c Command) Encode() ([]byte, error) { return json.Marshal(c) }

// Entry is one committed log entry handed to ApplyBatch. Data is nil for
// entries that carry no command (raft configuration changes, no-ops); they
// only advance the applied index.
type Entry struct {
	Index uint64
	Data  []byte
}

// ApplyBatch applies committed entries in one SQLite transaction and returns
// one result per entry: *store.TxnResponse, *CompactResult, nil, or an error
// wrapping store.ErrInvalidRequest for an entry that was rejected before it
// wrote anything (the same on every replica). Entries at or below the
// applied index recorded in the database are skipped, which makes
// re-application after a restart harmless.
//
// Any other failure (a full disk, a SQLite I/O error, a failed commit) is
// local to this replica, and skipping the entries would leave it without
// what the others have. ApplyBatch therefore halts: it rolls the batch back,
// reports the failure (Stalled), and tries the same batch again with a
// growing pause until it succeeds, for instance once disk space is freed.
// Only StopApplying (the node shutting down) ends the wait; the batch's
// results are then store.ErrClosed and the entries are applied again after
// the next start, from the raft log.
func (s *State) ApplyBatch(entries []Entry) []any {
	wait := haltFirstPause
	var lastLog time.Time
	for {
		results, err := s.tryApply(entries)
		if err == nil {
			if since, failed := s.Stalled(); failed != nil {
				s.stall.Store(nil)
				s.logger().Info("applying committed entries again after a local failure",
					zap.Uint64("from", entries[0].Index), zap.Duration("halted", time.Since(since)))
			}
			return results
		}
		if errors.Is(err, store.ErrClosed) {
			return closedResults(len(entries))
		}
		if _, failed := s.Stalled(); failed == nil {
			s.stall.Store(&stall{err: err, since: time.Now()})
		} else {
			s.stall.Store(&stall{err: err, since: s.stall.Load().since})
		}
		if time.Since(lastLog) >= haltLogEvery {
			lastLog = time.Now()
			s.logger().Error("cannot apply committed entries; this node halts applying and retries (nothing is skipped)",
				zap.Uint64("from", entries[0].Index), zap.Uint64("to", entries[len(entries)-1].Index),
				zap.Bool("diskFull", IsDiskFull(err)), zap.Error(err))
		}
		select {
		case <-s.stopApplying:
			return closedResults(len(entries))
		case <-time.After(wait):
		}
		wait = min(2*wait, haltMaxPause)
	}
}

// Pauses between attempts of a halted batch, and how often the halt is
// logged again.
const (
	haltFirstPause = 100 * time.Millisecond
	haltMaxPause   = 2 * time.Second
	haltLogEvery   = time.Minute
)

// stall is a local failure that halted applying.
type stall struct {
	err   error
	since time.Time
}

// Stalled reports the failure that currently halts applying and since when
// it does; nil when applying works.
func (s *State) Stalled() (time.Time, error) {
	if st := s.stall.Load(); st != nil {
		return st.since, st.err
	}
	return time.Time{}, nil
}

// StopApplying makes a halted ApplyBatch give up instead of retrying, so a
// shutting-down node is not held by a batch it cannot apply.
func (s *State) StopApplying() {
	s.stopOnce.Do(func() { close(s.stopApplying) })
}

// IsDiskFull reports whether err is SQLite's or the OS's "no space left".
func IsDiskFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}

func closedResults(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = store.ErrClosed
	}
	return out
}

// tryApply is one attempt at a batch.
func (s *State) tryApply(entries []Entry) ([]any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.wdb == nil {
		return nil, store.ErrClosed
	}
	return s.applyBatch(entries)
}

func (s *State) applyBatch(entries []Entry) ([]any, error) {
	s.ckpt.restartIfTooBig(s.wdb)
	results := make([]any, len(entries))
	ctx := context.Background()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ap := &applier{tx: tx, ctx: ctx, specs: s.specs, st: s.stmts, wq: s.wq, stx: map[*sql.Stmt]*sql.Stmt{},
		rev: s.revision.Load(), compact: s.compactRevision.Load(), hash: s.StateHash()}
	applied := s.appliedIndex.Load()
	last := applied
	for i, e := range entries {
		if e.Index <= applied {
			continue
		}
		last = e.Index
		if e.Data == nil {
			continue
		}
		res, err := ap.applyEntry(e)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidRequest) || ap.wrote {
				return nil, fmt.Errorf("entry %d: %w", e.Index, err)
			}
			res = err
		}
		results[i] = res
	}
	if last == applied {
		return results, nil
	}
	// A batch that wrote nothing (no-ops, reads, failed compares) commits
	// nothing: its entries are pure, and applying them again after a
	// restart gives the same answers.
	if ap.wroteAny {
		if ap.metaDirty {
			if err := ap.saveMeta(last); err != nil {
				return nil, fmt.Errorf("saving meta at index %d: %w", last, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return nil, fmt.Errorf("commit of entries up to %d: %w", last, err)
		}
	}
	s.areas.mark(ap.areas, ap.rev)
	s.revision.Store(ap.rev)
	s.compactRevision.Store(ap.compact)
	s.stateHash.Store(ap.hash)
	s.appliedIndex.Store(last)
	s.broadcast()
	return results, nil
}

type applier struct {
	tx      *sql.Tx
	ctx     context.Context
	specs   []IndexSpec
	st      *statements
	wq      *stmtCache              // rangeIn's queries on the writer
	stx     map[*sql.Stmt]*sql.Stmt // prepared statements bound to tx
	areas   map[string]struct{}     // areas of the keys written
	rev     int64
	compact int64
	hash    string
	changes []byte // change records of the current Txn
	wrote   bool   // the current entry has written something
	// wroteAny: some entry of the batch wrote; metaDirty: meta must
	// record the applied index and compaction point.
	wroteAny, metaDirty bool
}

// exec runs a prepared statement inside the batch transaction.
func (a *applier) exec(stmt *sql.Stmt, args ...any) (sql.Result, error) {
	a.wrote, a.wroteAny = true, true
	return a.bound(stmt).ExecContext(a.ctx, args...)
}

// prepared is rangeIn's prepareFunc inside the batch transaction.
func (a *applier) prepared(query string) (*sql.Stmt, error) {
	st, err := a.wq.get(query)
	if err != nil {
		return nil, err
	}
	return a.bound(st), nil
}

func (a *applier) bound(stmt *sql.Stmt) *sql.Stmt {
	b, ok := a.stx[stmt]
	if !ok {
		b = a.tx.StmtContext(a.ctx, stmt)
		a.stx[stmt] = b
	}
	return b
}

// applyEntry applies one command. A rejected command (store.ErrInvalidRequest)
// is detected before anything is written, which a.wrote confirms.
func (a *applier) applyEntry(e Entry) (any, error) {
	a.wrote = false
	var cmd Command
	if err := json.Unmarshal(e.Data, &cmd); err != nil {
		return nil, fmt.Errorf("%w: undecodable command at index %d: %w", store.ErrInvalidRequest, e.Index, err)
	}
	switch cmd.Kind {
	case CommandTxn:
		if cmd.Txn == nil {
			return nil, fmt.Errorf("%w: txn command without a body", store.ErrInvalidRequest)
		}
		return a.applyTxn(e.Index, e.Data, cmd.Txn)
	case CommandCompact:
		if cmd.Compact == nil {
			return nil, fmt.Errorf("%w: compact command without a body", store.ErrInvalidRequest)
		}
		return a.applyCompact(*cmd.Compact)
	}
	return nil, fmt.Errorf("%w: unknown command kind %d", store.ErrInvalidRequest, cmd.Kind)
}

func (a *applier) saveMeta(appliedIndex uint64) error {
	for _, m := range []struct {
		name string
		num  int64
	}{
		{metaAppliedIndex, int64(appliedIndex)},
		{metaCompactRevision, a.compact},
	} {
		if _, err := a.exec(a.st.saveMeta, m.name, m.num, ""); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) get(key string) (*store.KeyValue, error) {
	kv := &store.KeyValue{Key: key}
	err := a.bound(a.st.get).QueryRowContext(a.ctx, key).Scan(&kv.Value, &kv.CreateRevision, &kv.ModRevision, &kv.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return kv, err
}

func compareHolds(c store.Compare, kv *store.KeyValue) bool {
	if c.Target == store.TargetValue {
		if kv == nil {
			return false
		}
		return relation(bytes.Compare(kv.Value, c.Value), c.Result)
	}
	var have int64
	if kv != nil {
		switch c.Target {
		case store.TargetVersion:
			have = kv.Version
		case store.TargetCreateRevision:
			have = kv.CreateRevision
		case store.TargetModRevision:
			have = kv.ModRevision
		}
	}
	switch {
	case have < c.Number:
		return relation(-1, c.Result)
	case have > c.Number:
		return relation(1, c.Result)
	}
	return relation(0, c.Result)
}

func relation(cmp int, r store.CompareResult) bool {
	switch r {
	case store.Equal:
		return cmp == 0
	case store.NotEqual:
		return cmp != 0
	case store.Less:
		return cmp < 0
	case store.Greater:
		return cmp > 0
	}
	return false
}

func (a *applier) applyTxn(index uint64, raw []byte, req *store.TxnRequest) (*store.TxnResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	succeeded := true
	// What the compares read is the state the Txn's first puts replace:
	// putRun takes it from here instead of reading the keys again.
	read := map[string]*store.KeyValue{}
	for _, c := range req.Compares {
		kv, seen := read[c.Key]
		if !seen {
			var err error
			if kv, err = a.get(c.Key); err != nil {
				return nil, err
			}
			read[c.Key] = kv
		}
		if !compareHolds(c, kv) {
			succeeded = false
			break
		}
	}
	ops := req.Then
	if !succeeded {
		ops = req.Else
	}
	next := a.rev + 1
	wrote := false
	a.changes = a.changes[:0]
	resp := &store.TxnResponse{Succeeded: succeeded, Responses: make([]store.OpResponse, len(ops))}
	// Consecutive puts of distinct keys are written together; a range, a
	// delete or a second put of a key first writes the run before it, so
	// every op sees the ones before it.
	var run []int
	inRun := map[string]bool{}
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := a.putRun(next, ops, run, resp.Responses, read)
		run = run[:0]
		clear(inRun)
		clear(read) // written now: later runs read the keys again
		return err
	}
	for i, op := range ops {
		if op.Type == store.OpPut {
			if inRun[op.Key] {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			run, inRun[op.Key], wrote = append(run, i), true, true
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if op.Type == store.OpDelete {
			clear(read)
		}
		var r store.OpResponse
		var err error
		switch op.Type {
		case store.OpRange:
			r, err = rangeIn(a.ctx, a.prepared, op)
		case store.OpDelete:
			r, err = a.delete(next, op)
			wrote = wrote || r.Deleted > 0
		}
		if err != nil {
			return nil, err
		}
		resp.Responses[i] = r
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if wrote {
		a.rev = next
		h := sha256.New()
		prev, _ := hex.DecodeString(a.hash)
		h.Write(prev)
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(next))
		binary.BigEndian.PutUint64(b[8:], index)
		h.Write(b[:])
		h.Write(raw)
		sum := h.Sum(nil)
		a.hash = hex.EncodeToString(sum)
		if _, err := a.exec(a.st.insertRevision, next, index, sum, a.changes); err != nil {
			return nil, err
		}
	}
	resp.Header.Revision = a.rev
	return resp, nil
}

// specIndex is the position in a.specs of the index that covers key, or -1.
func (a *applier) specIndex(key string) int {
	for i := range a.specs {
		if strings.HasPrefix(key, a.specs[i].Prefix) {
			return i
		}
	}
	return -1
}

// putRun writes the puts ops[run[0]], ops[run[1]], ... (distinct keys) at
// revision rev: their previous versions are read (except those in known,
// read already: nil for a missing key), the kv rows written with multi-row
// statements, their change records added to the Txn's, and their index
// rows written (see writeIndexes).
func (a *applier) putRun(rev int64, ops []store.Op, run []int, resps []store.OpResponse, known map[string]*store.KeyValue) error {
	keys := make([]any, 0, len(run))
	prevs := make(map[string]*store.KeyValue, len(run))
	for _, o := range run {
		if kv, ok := known[ops[o].Key]; ok {
			if kv != nil {
				prevs[kv.Key] = kv
			}
			continue
		}
		keys = append(keys, ops[o].Key)
	}
	err := chunks(len(keys), func(off, n int) error {
		rows, err := a.bound(a.st.getMany[n]).QueryContext(a.ctx, keys[off:off+n]...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			kv := &store.KeyValue{}
			if err := rows.Scan(&kv.Key, &kv.Value, &kv.CreateRevision, &kv.ModRevision, &kv.Version); err != nil {
				return err
			}
			prevs[kv.Key] = kv
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	kvRows := make([]any, 0, 5*len(run))
	newRows := make([][]any, len(a.specs))
	for _, o := range run {
		op := ops[o]
		create, version := rev, int64(1)
		var prevMod int64
		prev := prevs[op.Key]
		if prev != nil {
			create, version, prevMod = prev.CreateRevision, prev.Version+1, prev.ModRevision
			if op.PrevKV {
				resps[o].PrevKVs = []*store.KeyValue{prev}
			}
		}
		value := op.Value
		if value == nil {
			value = []byte{}
		}
		kvRows = append(kvRows, op.Key, value, create, rev, version)
		a.touch(op.Key)
		a.changes = appendChange(a.changes, changePut, op.Key, value, create, version, prevMod)
		if i := a.specIndex(op.Key); i >= 0 {
			if prev == nil {
				newRows[i] = append(newRows[i], op.Key, string(value))
			} else if err := a.updateIndex(a.specs[i], op.Key, prev.Value, value); err != nil {
				return fmt.Errorf("index %s: %w", a.specs[i].Name, err)
			}
		}
	}
	if err := a.execRows(a.st.upsertKVMany, 5, kvRows); err != nil {
		return err
	}
	for i, rows := range newRows {
		if err := a.execRows(a.st.indexUpsertMany[a.specs[i].Name], 2, rows); err != nil {
			return fmt.Errorf("index %s: %w", a.specs[i].Name, err)
		}
	}
	return nil
}

// updateIndex brings the index row of an existing key from old to value,
// writing only the columns whose extracted value changed: SQLite rewrites
// the b-tree of every column an UPDATE names, changed or not, and a state
// change of a channel would otherwise rewrite all 20-odd of them.
func (a *applier) updateIndex(spec IndexSpec, key string, old, value []byte) error {
	if bytes.Equal(old, value) {
		return nil
	}
	var mask uint64
	if err := a.bound(a.st.indexChanged[spec.Name]).QueryRowContext(a.ctx, string(old), string(value)).Scan(&mask); err != nil {
		return err
	}
	for i := range spec.Columns {
		if mask&(1<<i) == 0 {
			continue
		}
		if _, err := a.exec(a.st.indexSet[spec.Name][i], key, string(value)); err != nil {
			return err
		}
	}
	return nil
}

// execRows writes rows given as one flat list of width arguments each.
func (a *applier) execRows(stmts map[int]*sql.Stmt, width int, args []any) error {
	return chunks(len(args)/width, func(off, n int) error {
		_, err := a.exec(stmts[n], args[off*width:(off+n)*width]...)
		return err
	})
}

// touch records the area of a written key.
func (a *applier) touch(key string) {
	if a.areas == nil {
		a.areas = map[string]struct{}{}
	}
	a.areas[area(key)] = struct{}{}
}

func (a *applier) delete(rev int64, op store.Op) (store.OpResponse, error) {
	var r store.OpResponse
	victims, err := rangeIn(a.ctx, a.prepared, store.Op{Type: store.OpRange, Key: op.Key, End: op.End})
	if err != nil {
		return r, err
	}
	for _, kv := range victims.KVs {
		if _, err := a.exec(a.st.deleteKV, kv.Key); err != nil {
			return r, err
		}
		a.touch(kv.Key)
		a.changes = appendChange(a.changes, changeDelete, kv.Key, nil, kv.CreateRevision, kv.Version, kv.ModRevision)
		if i := a.specIndex(kv.Key); i >= 0 {
			if _, err := a.exec(a.st.indexDelete[a.specs[i].Name], kv.Key); err != nil {
				return r, err
			}
		}
		r.Deleted++
		if op.PrevKV {
			r.PrevKVs = append(r.PrevKVs, kv)
		}
	}
	return r, nil
}

func (a *applier) applyCompact(req CompactRequest) (*CompactResult, error) {
	if req.Revision <= a.compact {
		return &CompactResult{Revision: a.compact}, nil
	}
	if req.Revision > a.rev {
		return nil, fmt.Errorf("%w: cannot compact revision %d beyond current revision %d", store.ErrInvalidRequest, req.Revision, a.rev)
	}
	res := &CompactResult{Revision: req.Revision}
	a.wrote, a.wroteAny, a.metaDirty = true, true, true
	if err := a.tx.QueryRowContext(a.ctx, `SELECT count(*) FROM revisions WHERE revision <= ? AND changes IS NOT NULL`, req.Revision).Scan(&res.HistoryRows); err != nil {
		return nil, err
	}
	// Keep the hash of the compaction point itself so parity checks can
	// still compare at it; its changes go with the older ones.
	r, err := a.tx.ExecContext(a.ctx, `DELETE FROM revisions WHERE revision < ?`, req.Revision)
	if err != nil {
		return nil, err
	}
	res.RevisionHashes, _ = r.RowsAffected()
	if _, err := a.tx.ExecContext(a.ctx, `UPDATE revisions SET changes = NULL WHERE revision = ?`, req.Revision); err != nil {
		return nil, err
	}
	a.compact = req.Revision
	return res, nil
}
