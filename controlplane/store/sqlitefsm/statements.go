package sqlitefsm

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/svcplatform/svc/controlplane/store"
)

// statements are the apply path's SQL, prepared once per writer connection
// instead of parsed for every put. A run of puts is written with
// multi-row statements (see rowSizes): with the pure-Go driver, the cost of
// executing a statement is most of the cost of a small write.
type statements struct {
	get, deleteKV, insertRevision, saveMeta *sql.Stmt
	// by rows, then (index) by index name
	getMany, upsertKVMany map[int]*sql.Stmt
	indexUpsertMany       map[string]map[int]*sql.Stmt
	indexDelete           map[string]*sql.Stmt
	// indexChanged computes, per index, which columns an update changes;
	// indexSet[name][i] sets column i of one row.
	indexChanged map[string]*sql.Stmt
	indexSet     map[string][]*sql.Stmt
	all          []*sql.Stmt
}

// rowSizes are the row counts of the multi-row statements, largest first:
// n rows are written in n/32 + n%32/8 + n%8 executions.
var rowSizes = []int{32, 8, 1}

// chunks calls fn for consecutive pieces of n rows, each of a size in
// rowSizes.
func chunks(n int, fn func(off, size int) error) error {
	for off := 0; off < n; {
		size := 1
		for _, s := range rowSizes {
			if s <= n-off {
				size = s
				break
			}
		}
		if err := fn(off, size); err != nil {
			return err
		}
		off += size
	}
	return nil
}

// valuesList is n copies of a row's placeholders, comma-separated.
func valuesList(n int, row func(r int) string) string {
	rows := make([]string, n)
	for r := range rows {
		rows[r] = row(r)
	}
	return strings.Join(rows, ", ")
}

func prepare(db *sql.DB, specs []IndexSpec) (*statements, error) {
	st := &statements{getMany: map[int]*sql.Stmt{}, upsertKVMany: map[int]*sql.Stmt{},
		indexChanged: map[string]*sql.Stmt{}, indexSet: map[string][]*sql.Stmt{},
		indexUpsertMany: map[string]map[int]*sql.Stmt{}, indexDelete: map[string]*sql.Stmt{}}
	var err error
	p := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var stmt *sql.Stmt
		stmt, err = db.Prepare(q)
		if stmt != nil {
			st.all = append(st.all, stmt)
		}
		return stmt
	}
	st.get = p(`SELECT value, create_revision, mod_revision, version FROM kv WHERE key = ?`)
	st.deleteKV = p(`DELETE FROM kv WHERE key = ?`)
	st.insertRevision = p(`INSERT INTO revisions (revision, log_index, hash, changes) VALUES (?, ?, ?, ?)`)
	st.saveMeta = p(`INSERT INTO meta (name, num, text) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET num = excluded.num, text = excluded.text`)
	for _, spec := range specs {
		st.indexUpsertMany[spec.Name] = map[int]*sql.Stmt{}
		st.indexDelete[spec.Name] = p("DELETE FROM " + tableOf(spec) + " WHERE key = ?")
		st.indexChanged[spec.Name] = p(changedSQL(spec))
		for i := range spec.Columns {
			st.indexSet[spec.Name] = append(st.indexSet[spec.Name], p(setColumnSQL(spec, i)))
		}
	}
	for _, n := range rowSizes {
		st.getMany[n] = p(`SELECT key, value, create_revision, mod_revision, version FROM kv WHERE key IN (` +
			valuesList(n, func(int) string { return "?" }) + `)`)
		st.upsertKVMany[n] = p(`INSERT INTO kv (key, value, create_revision, mod_revision, version) VALUES ` +
			valuesList(n, func(int) string { return "(?, ?, ?, ?, ?)" }) +
			` ON CONFLICT(key) DO UPDATE SET value = excluded.value, mod_revision = excluded.mod_revision, version = excluded.version`)
		for _, spec := range specs {
			st.indexUpsertMany[spec.Name][n] = p(upsertSQL(spec, n))
		}
	}
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *statements) close() {
	for _, s := range st.all {
		s.Close()
	}
}

// stmtCache holds the read path's statements, prepared on a pool when it
// opens: database/sql then prepares each once per connection and reuses it
// inside transactions, instead of SQLite parsing the text for every read.
// They are prepared up front because the writer pool has a single
// connection, which an apply transaction holds.
//
// The query layer's texts depend on each listing's shape (its conditions
// and order), so they are prepared on first use instead, up to
// maxDynamic texts; past that a text runs unprepared. SQLite re-plans
// (and so parses again) those whose bound values can change their plan.
type stmtCache struct {
	m  map[string]*sql.Stmt
	db *sql.DB

	mu     sync.Mutex
	dyn    map[string]*sql.Stmt // nil while being prepared
	closed bool
}

// maxDynamic bounds the prepared query shapes: every listing filter
// combination is one, and a connection keeps each it has run.
const maxDynamic = 256

// readQueries are every text the read path runs: the revision, the point
// read, the watch's history, and rangeIn's shapes.
func readQueries() []string {
	q := []string{selectRevision, getAtRevision, selectCompactRevision, selectHistory, selectChangesAt}
	for _, op := range []store.Op{{Key: "k"}, {Key: "k", End: "\x00"}, {Key: "k", End: "l"}} {
		where, _ := rangeWhere(op)
		q = append(q, countQuery(where), selectQuery(where, false), selectQuery(where, true))
	}
	return q
}

func newStmtCache(db *sql.DB) (*stmtCache, error) {
	c := &stmtCache{m: map[string]*sql.Stmt{}, db: db, dyn: map[string]*sql.Stmt{}}
	for _, q := range readQueries() {
		st, err := db.Prepare(q)
		if err != nil {
			c.close()
			return nil, err
		}
		c.m[q] = st
	}
	return c, nil
}

func (c *stmtCache) get(query string) (*sql.Stmt, error) {
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	return nil, fmt.Errorf("sqlitefsm: query not prepared: %s", query)
}

// dynamic answers text prepared on the pool, or nil when it is not (yet):
// the caller then runs the text unprepared. The first use starts the
// preparation aside, because preparing on the pool needs a free
// connection while the caller holds one in its transaction: with every
// connection held by a caller waiting here, nothing would ever free one.
func (c *stmtCache) dynamic(text string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.dyn[text]; ok || c.closed || len(c.dyn) >= maxDynamic {
		return st
	}
	c.dyn[text] = nil // being prepared
	go func() {
		st, err := c.db.Prepare(text)
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err != nil:
			delete(c.dyn, text) // the next use tries again
		case c.closed:
			st.Close()
		default:
			c.dyn[text] = st
		}
	}()
	return nil
}

func (c *stmtCache) close() {
	for _, st := range c.m {
		st.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, st := range c.dyn {
		if st != nil {
			st.Close()
		}
	}
	c.dyn = map[string]*sql.Stmt{}
}
