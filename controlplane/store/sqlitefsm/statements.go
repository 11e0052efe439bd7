package sqlitefsm

import (
	"database/sql"
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
