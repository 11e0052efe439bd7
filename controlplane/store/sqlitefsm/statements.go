package sqlitefsm

import (
	"database/sql"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// statements are the apply path's SQL, prepared once per writer connection
// instead of parsed for every put.
type statements struct {
	get, upsertKV, historyPut, historyDelete, deleteKV, revisionHash, saveMeta *sql.Stmt
	indexUpsert, indexDelete                                                   map[string]*sql.Stmt
	all                                                                        []*sql.Stmt
}

func prepare(db *sql.DB, specs []IndexSpec) (*statements, error) {
	st := &statements{indexUpsert: map[string]*sql.Stmt{}, indexDelete: map[string]*sql.Stmt{}}
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
	st.upsertKV = p(`INSERT INTO kv (key, value, create_revision, mod_revision, version) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value, mod_revision = excluded.mod_revision, version = excluded.version`)
	st.historyPut = p(`INSERT INTO history (revision, seq, type, key, value, create_revision, version, prev_value, prev_create, prev_mod, prev_version)
		VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`)
	st.historyDelete = p(`INSERT INTO history (revision, seq, type, key, value, create_revision, version, prev_value, prev_create, prev_mod, prev_version)
		VALUES (?, ?, 1, ?, NULL, 0, 0, ?, ?, ?, ?)`)
	st.deleteKV = p(`DELETE FROM kv WHERE key = ?`)
	st.revisionHash = p(`INSERT INTO revision_hashes (revision, log_index, hash) VALUES (?, ?, ?)`)
	st.saveMeta = p(`INSERT INTO meta (name, num, text) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET num = excluded.num, text = excluded.text`)
	for _, spec := range specs {
		st.indexUpsert[spec.Name] = p(spec.upsertSQL())
		st.indexDelete[spec.Name] = p("DELETE FROM " + spec.Table() + " WHERE key = ?")
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
type stmtCache struct {
	m map[string]*sql.Stmt
}

// readQueries are every text the read path runs: the revision, the point
// read, and rangeIn's shapes.
func readQueries() []string {
	q := []string{selectRevision, getAtRevision}
	for _, op := range []store.Op{{Key: "k"}, {Key: "k", End: "\x00"}, {Key: "k", End: "l"}} {
		where, _ := rangeWhere(op)
		q = append(q, countQuery(where), selectQuery(where, false), selectQuery(where, true))
	}
	return q
}

func newStmtCache(db *sql.DB) (*stmtCache, error) {
	c := &stmtCache{m: map[string]*sql.Stmt{}}
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

func (c *stmtCache) close() {
	for _, st := range c.m {
		st.Close()
	}
}
