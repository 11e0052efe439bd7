package sqlitefsm

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/svcplatform/svc/controlplane/store"
)

// State is one replica's SQLite state. Apply* and Restore must be called from
// a single goroutine (raft's FSM goroutine); reads and watches may run from
// any goroutine.
type State struct {
	path  string
	specs []IndexSpec

	// mu guards the database handles: readers hold it shared, Restore holds
	// it exclusively while it swaps the file.
	mu    sync.RWMutex
	wdb   *sql.DB // single writer connection, used by the apply goroutine
	rdb   *sql.DB // pool of read-only connections
	stmts *statements
	// rq and wq hold the prepared read queries of rdb and wdb.
	rq, wq *stmtCache
	ckpt   *checkpointer

	revision        atomic.Int64
	areas           areaRevisions
	appliedIndex    atomic.Uint64
	compactRevision atomic.Int64
	stateHash       atomic.Value // string
	watchers        atomic.Int32

	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced after every applied batch

	walLimit     atomic.Int64
	log          atomic.Pointer[zap.Logger]
	stall        atomic.Pointer[stall]
	stopApplying chan struct{}
	stopOnce     sync.Once
}

// SetWALLimit bounds the WAL: past limit bytes the writer waits for a
// checkpoint that lets the WAL start over (see checkpointer). A node on a
// small volume sets it from the volume's size; the default is 32 MiB.
func (s *State) SetWALLimit(limit int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.walLimit.Store(limit)
	if s.ckpt != nil {
		s.ckpt.setLimit(limit)
	}
	if s.wdb != nil {
		s.wdb.Exec(fmt.Sprintf("PRAGMA journal_size_limit=%d", min(limit/4, walKeepBytes)))
	}
}

// SetLogger sets where a halted apply reports itself.
func (s *State) SetLogger(l *zap.Logger) { s.log.Store(l) }

func (s *State) logger() *zap.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	return zap.NewNop()
}

// Open opens (creating if needed) the state database at path with the given
// index declarations.
func Open(path string, specs []IndexSpec) (*State, error) {
	sorted := append([]IndexSpec(nil), specs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i, s := range sorted {
		if err := validate(s); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Name == s.Name {
			return nil, fmt.Errorf("index %q declared twice", s.Name)
		}
	}
	// The database holds password hashes, token digests and sealed
	// secrets: create it private (SQLite gives its -wal and -shm files the
	// same mode) and tighten an existing one.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, err
	}
	if err := initPageSize(path); err != nil {
		return nil, err
	}
	s := &State{path: path, specs: sorted, notify: make(chan struct{}), stopApplying: make(chan struct{})}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// writerBusyTimeout is how long a connection waits for a lock.
const writerBusyTimeout = 10 * time.Second

// pageSize is the page size of new databases. A put of a small record
// rewrites one kv leaf page and its part of the revisions page, in the WAL
// and again when checkpointed: 2 KiB pages write a third less per put than
// SQLite's default 4 KiB (storebench, November 2026), and records up to
// 488 bytes still fit in the leaf. Existing databases keep their page size.
var pageSize = 2048

// initPageSize gives a new (empty) database file its page size and WAL
// mode; SQLite fixes the page size once the file has its header, and the
// driver applies journal_mode from the DSN before any other pragma.
func initPageSize(path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() > 0 {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{fmt.Sprintf("PRAGMA page_size=%d", pageSize), "PRAGMA journal_mode=WAL", "CREATE TABLE IF NOT EXISTS meta (name " +
		"TEXT PRIMARY KEY, num INTEGER NOT NULL DEFAULT 0, text TEXT NOT NULL DEFAULT '') WITHOUT ROWID"} {
		if _, err := db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", writerBusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(0)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// The raft log is the durable record; after a crash entries beyond
		// the last synced SQLite commit are applied again from it.
		q.Add("_pragma", "synchronous(NORMAL)")
		// Checkpoints run in the background (checkpointer), not inline in
		// the apply goroutine's commits.
		q.Add("_pragma", "wal_autocheckpoint(0)")
		// Once a checkpoint let the WAL start over, a WAL file that grew
		// under a burst is cut back to this size instead of staying large.
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walKeepBytes))
		// 8 MiB of page cache holds the b-trees' upper pages and the pages
		// being appended to. A larger cache costs at every commit: SQLite
		// then scans the whole page hash to drop pages past the end of the
		// database (pcache1TruncateUnsafe was 3.4% of agentbench's CPU with
		// 64 MiB, 0.6% with 8 MiB).
		q.Add("_pragma", "cache_size(-8192)")
		q.Add("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

func (s *State) open() error {
	wdb, err := sql.Open("sqlite", dsn(s.path, false))
	if err != nil {
		return err
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	if err := migrate(wdb); err != nil {
		wdb.Close()
		return fmt.Errorf("migrate %s: %w", s.path, err)
	}
	if err := ensureIndexes(wdb, s.specs); err != nil {
		wdb.Close()
		return err
	}
	rdb, err := sql.Open("sqlite", dsn(s.path, true))
	if err != nil {
		wdb.Close()
		return err
	}
	rdb.SetMaxOpenConns(16)
	rdb.SetMaxIdleConns(16)
	stmts, err := prepare(wdb, s.specs)
	if err != nil {
		wdb.Close()
		rdb.Close()
		return err
	}
	s.wdb, s.rdb, s.stmts = wdb, rdb, stmts
	if s.rq, err = newStmtCache(rdb); err != nil {
		s.closeHandles()
		return err
	}
	if s.wq, err = newStmtCache(wdb); err != nil {
		s.closeHandles()
		return err
	}
	if s.ckpt, err = startCheckpointer(s.path); err != nil {
		s.closeHandles()
		return err
	}
	if limit := s.walLimit.Load(); limit > 0 {
		// A restore reopens the database: keep the node's limit.
		s.ckpt.setLimit(limit)
		s.wdb.Exec(fmt.Sprintf("PRAGMA journal_size_limit=%d", min(limit/4, walKeepBytes)))
	}
	return s.loadMeta()
}

func migrate(db *sql.DB) error {
	// schema_migrations itself is created by the first migration; tolerate
	// its absence on a new database.
	applied := map[int]bool{}
	rows, err := db.Query(`SELECT version FROM schema_migrations`)
	if err == nil {
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			applied[v] = true
		}
		rows.Close()
	} else if !strings.Contains(err.Error(), "no such table") {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		for _, ddl := range m.ddl {
			if _, err := tx.Exec(ddl); err != nil {
				tx.Rollback()
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		if m.run != nil {
			if err := m.run(tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *State) loadMeta() error {
	get := func(name string) (int64, error) {
		var n int64
		err := s.wdb.QueryRow(`SELECT num FROM meta WHERE name = ?`, name).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return n, err
	}
	idx, err := get(metaAppliedIndex)
	if err != nil {
		return err
	}
	comp, err := get(metaCompactRevision)
	if err != nil {
		return err
	}
	var rev, logIndex int64
	var hash []byte
	err = s.wdb.QueryRow(`SELECT revision, log_index, hash FROM revisions ORDER BY revision DESC LIMIT 1`).Scan(&rev, &logIndex, &hash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	s.areas.reset(rev)
	s.revision.Store(rev)
	s.appliedIndex.Store(uint64(max(idx, logIndex)))
	s.compactRevision.Store(comp)
	s.stateHash.Store(hex.EncodeToString(hash))
	return nil
}

// PersistAppliedIndex records the applied index in the database when the
// last entries applied wrote nothing (so no revisions row carries it). Raft
// calls it, through the FSM, when it takes a snapshot: a restart then finds
// the database as new as the snapshot and does not restore it.
func (s *State) PersistAppliedIndex() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.wdb == nil {
		return store.ErrClosed
	}
	_, err := s.wdb.Exec(`INSERT INTO meta (name, num, text) VALUES (?, ?, '') ON CONFLICT(name) DO UPDATE SET num = excluded.num`,
		metaAppliedIndex, int64(s.appliedIndex.Load()))
	return err
}

// Close releases the database handles.
func (s *State) Close() error {
	s.StopApplying()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeHandles()
}

// closeHandles closes everything open() opened; s.mu must be held.
func (s *State) closeHandles() error {
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.stop())
		s.ckpt = nil
	}
	for _, c := range []*stmtCache{s.rq, s.wq} {
		if c != nil {
			c.close()
		}
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.stmts != nil {
		s.stmts.close()
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	s.rdb, s.wdb, s.stmts, s.rq, s.wq = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// Revision is the latest applied store revision.
func (s *State) Revision() int64 { return s.revision.Load() }

// AppliedIndex is the raft index of the last applied entry.
func (s *State) AppliedIndex() uint64 { return s.appliedIndex.Load() }

// CompactRevision is the oldest revision whose history was removed; watches
// must start after it.
func (s *State) CompactRevision() int64 { return s.compactRevision.Load() }

// StateHash is the hash chain value after the latest revision.
func (s *State) StateHash() string { v, _ := s.stateHash.Load().(string); return v }

// Watchers is the number of open watches.
func (s *State) Watchers() int32 { return s.watchers.Load() }

// Path is the database file.
func (s *State) Path() string { return s.path }

// Specs returns the index declarations.
func (s *State) Specs() []IndexSpec { return append([]IndexSpec(nil), s.specs...) }

// Changed returns a channel closed at the next applied batch.
func (s *State) Changed() <-chan struct{} { return s.changed() }

// changed returns a channel closed at the next applied batch.
func (s *State) changed() <-chan struct{} {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	return s.notify
}

func (s *State) broadcast() {
	s.notifyMu.Lock()
	close(s.notify)
	s.notify = make(chan struct{})
	s.notifyMu.Unlock()
}

// WaitForRevision blocks until rev is applied or ctx ends.
func (s *State) WaitForRevision(ctx context.Context, rev int64) error {
	for {
		ch := s.changed()
		if s.Revision() >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitForIndex blocks until the raft entry at index is applied or ctx ends.
func (s *State) WaitForIndex(ctx context.Context, index uint64) error {
	for {
		ch := s.changed()
		if s.AppliedIndex() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ReadTx runs fn inside one read-only SQLite transaction, so every query in
// it sees the same applied revision, which is passed to fn.
func (s *State) ReadTx(ctx context.Context, fn func(tx *sql.Tx, revision int64) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.rdb == nil {
		return store.ErrClosed
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := s.rq.get(selectRevision)
	if err != nil {
		return err
	}
	var rev int64
	if err := tx.StmtContext(ctx, st).QueryRowContext(ctx).Scan(&rev); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return fn(tx, rev)
}

// selectRevision is the revision of the last write (the revisions table's
// last rowid, a seek to the end of its b-tree).
const selectRevision = `SELECT coalesce(max(revision), 0) FROM revisions`

// getAtRevision reads one key and the revision it was read at. A single
// SELECT sees one snapshot of the database, so the point reads that most
// requests make need no read transaction of their own.
const getAtRevision = `SELECT r.rev, kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version
	FROM (SELECT coalesce(max(revision), 0) AS rev FROM revisions) AS r LEFT JOIN kv ON kv.key = ?`

// get is Range for a single key.
func (s *State) get(ctx context.Context, key string, keysOnly bool) (*store.RangeResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.rdb == nil {
		return nil, store.ErrClosed
	}
	st, err := s.rq.get(getAtRevision)
	if err != nil {
		return nil, err
	}
	resp := &store.RangeResponse{}
	var found sql.NullString
	var value []byte
	var create, mod, version sql.NullInt64
	err = st.QueryRowContext(ctx, key).Scan(&resp.Header.Revision, &found, &value, &create, &mod, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return resp, nil // nothing applied yet
	}
	if err != nil || !found.Valid {
		return resp, err
	}
	if keysOnly {
		value = nil
	}
	resp.Count = 1
	resp.KVs = []*store.KeyValue{{Key: found.String, Value: value, CreateRevision: create.Int64, ModRevision: mod.Int64, Version: version.Int64}}
	return resp, nil
}

// Range reads keys from the local applied state.
func (s *State) Range(ctx context.Context, key string, opts store.RangeOptions) (*store.RangeResponse, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", store.ErrInvalidRequest)
	}
	if opts.End == "" && !opts.CountOnly {
		return s.get(ctx, key, opts.KeysOnly)
	}
	resp := &store.RangeResponse{}
	err := s.ReadTx(ctx, func(tx *sql.Tx, rev int64) error {
		resp.Header.Revision = rev
		r, err := rangeIn(ctx, txStmt(ctx, tx, s.rq), store.Op{Type: store.OpRange, Key: key, End: opts.End, Limit: opts.Limit, CountOnly: opts.CountOnly, KeysOnly: opts.KeysOnly})
		if err != nil {
			return err
		}
		resp.KVs, resp.Count, resp.More = r.KVs, r.Count, r.More
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// prepareFunc returns the statement for a query text, bound to the
// transaction the caller reads in.
type prepareFunc func(query string) (*sql.Stmt, error)

// txStmt prepares through c and binds to tx.
func txStmt(ctx context.Context, tx *sql.Tx, c *stmtCache) prepareFunc {
	return func(query string) (*sql.Stmt, error) {
		st, err := c.get(query)
		if err != nil {
			return nil, err
		}
		return tx.StmtContext(ctx, st), nil
	}
}

func rangeWhere(op store.Op) (string, []any) {
	switch op.End {
	case "":
		return "key = ?", []any{op.Key}
	case "\x00":
		return "key >= ?", []any{op.Key}
	default:
		return "key >= ? AND key < ?", []any{op.Key, op.End}
	}
}

func countQuery(where string) string { return "SELECT count(*) FROM kv WHERE " + where }

// selectQuery takes the limit as its last argument, so one prepared text
// serves every limit.
func selectQuery(where string, keysOnly bool) string {
	cols := "key, value, create_revision, mod_revision, version"
	if keysOnly {
		cols = "key, NULL, create_revision, mod_revision, version"
	}
	return "SELECT " + cols + " FROM kv WHERE " + where + " ORDER BY key LIMIT ?"
}

func rangeIn(ctx context.Context, prep prepareFunc, op store.Op) (store.OpResponse, error) {
	var out store.OpResponse
	where, args := rangeWhere(op)
	count, err := prep(countQuery(where))
	if err != nil {
		return out, err
	}
	if err := count.QueryRowContext(ctx, args...).Scan(&out.Count); err != nil {
		return out, err
	}
	if op.CountOnly || out.Count == 0 {
		return out, nil
	}
	limit := int64(-1) // SQLite's "no limit"
	if op.Limit > 0 {
		limit = op.Limit
	}
	sel, err := prep(selectQuery(where, op.KeysOnly))
	if err != nil {
		return out, err
	}
	rows, err := sel.QueryContext(ctx, append(args, limit)...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		kv := &store.KeyValue{}
		if err := rows.Scan(&kv.Key, &kv.Value, &kv.CreateRevision, &kv.ModRevision, &kv.Version); err != nil {
			return out, err
		}
		out.KVs = append(out.KVs, kv)
	}
	out.More = op.Limit > 0 && out.Count > int64(len(out.KVs))
	return out, rows.Err()
}

// FileSizes reports the database and WAL file sizes in bytes.
func (s *State) FileSizes() (db, wal int64) {
	if fi, err := os.Stat(s.path); err == nil {
		db = fi.Size()
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		wal = fi.Size()
	}
	return db, wal
}
