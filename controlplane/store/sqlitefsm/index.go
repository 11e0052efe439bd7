package sqlitefsm

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
)

// IndexSpec declares a typed index table for one kind of record. Every key
// under Prefix whose value is a JSON object gets a row in table idx_<Name>
// with one typed column per IndexColumn, maintained in the same SQLite
// transaction as the kv row, so a query on the index never sees a state the
// kv table does not have.
type IndexSpec struct {
	Name    string
	Prefix  string
	Columns []IndexColumn
}

// IndexColumn maps a JSON path of the stored value to a typed column.
type IndexColumn struct {
	Name string
	// Type is TEXT, INTEGER or REAL.
	Type string
	// Path is a SQLite JSON path such as $.username.
	Path string
}

// Table is the SQL table name of the index.
func (s IndexSpec) Table() string { return "idx_" + s.Name }

var identRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
var pathRe = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

func (s IndexSpec) validate() error {
	if !identRe.MatchString(s.Name) {
		return fmt.Errorf("index %q: name must match %s", s.Name, identRe)
	}
	if s.Prefix == "" || !strings.HasSuffix(s.Prefix, "/") {
		return fmt.Errorf("index %q: prefix must be non-empty and end with /", s.Name)
	}
	for _, c := range s.Columns {
		if !identRe.MatchString(c.Name) || c.Name == "key" || c.Name == "mod_revision" {
			return fmt.Errorf("index %q: bad column name %q", s.Name, c.Name)
		}
		switch c.Type {
		case "TEXT", "INTEGER", "REAL":
		default:
			return fmt.Errorf("index %q: column %q has type %q, want TEXT, INTEGER or REAL", s.Name, c.Name, c.Type)
		}
		if !pathRe.MatchString(c.Path) {
			return fmt.Errorf("index %q: column %q has bad JSON path %q", s.Name, c.Name, c.Path)
		}
	}
	return nil
}

func (s IndexSpec) fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s", s.Name, s.Prefix)
	for _, c := range s.Columns {
		fmt.Fprintf(h, "|%s:%s:%s", c.Name, c.Type, c.Path)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (s IndexSpec) createDDL() []string {
	cols := []string{"key TEXT PRIMARY KEY", "mod_revision INTEGER NOT NULL"}
	for _, c := range s.Columns {
		cols = append(cols, c.Name+" "+c.Type)
	}
	ddl := []string{fmt.Sprintf("CREATE TABLE %s (%s) WITHOUT ROWID", s.Table(), strings.Join(cols, ", "))}
	for _, c := range s.Columns {
		ddl = append(ddl, fmt.Sprintf("CREATE INDEX %s_%s ON %s (%s)", s.Table(), c.Name, s.Table(), c.Name))
	}
	return ddl
}

// upsertSQL writes rows index rows from kv values, each given as three
// arguments (key, mod revision, value); values that are not valid JSON
// index as NULL columns instead of failing the transaction.
func (s IndexSpec) upsertSQL(rows int) string {
	names := []string{"key", "mod_revision"}
	for _, c := range s.Columns {
		names = append(names, c.Name)
	}
	tuples := make([]string, rows)
	for r := range tuples {
		k, m, v := 3*r+1, 3*r+2, 3*r+3
		vals := []string{fmt.Sprintf("?%d", k), fmt.Sprintf("?%d", m)}
		for _, c := range s.Columns {
			vals = append(vals, fmt.Sprintf("CASE WHEN json_valid(?%d) THEN json_extract(?%d, '%s') END", v, v, c.Path))
		}
		tuples[r] = "(" + strings.Join(vals, ", ") + ")"
	}
	return fmt.Sprintf("INSERT OR REPLACE INTO %s (%s) VALUES %s", s.Table(), strings.Join(names, ", "), strings.Join(tuples, ", "))
}

func (s IndexSpec) backfillSQL() string {
	names := []string{"key", "mod_revision"}
	vals := []string{"key", "mod_revision"}
	for _, c := range s.Columns {
		names = append(names, c.Name)
		vals = append(vals, fmt.Sprintf("CASE WHEN json_valid(value) THEN json_extract(value, '%s') END", c.Path))
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM kv WHERE key >= ?1 AND key < ?2",
		s.Table(), strings.Join(names, ", "), strings.Join(vals, ", "))
}

// ensureIndexes creates missing index tables, rebuilds those whose
// declaration changed, filling them from the kv table, and drops those no
// longer declared. The result depends only on kv, so replicas agree.
func ensureIndexes(db *sql.DB, specs []IndexSpec) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := dropUndeclared(tx, specs); err != nil {
		return err
	}
	for _, s := range specs {
		var fp string
		err := tx.QueryRow(`SELECT fingerprint FROM index_specs WHERE name = ?`, s.Name).Scan(&fp)
		if err == nil && fp == s.fingerprint() {
			continue
		}
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if _, err := tx.Exec("DROP TABLE IF EXISTS " + s.Table()); err != nil {
			return err
		}
		for _, ddl := range s.createDDL() {
			if _, err := tx.Exec(ddl); err != nil {
				return fmt.Errorf("index %s: %w", s.Name, err)
			}
		}
		if _, err := tx.Exec(s.backfillSQL(), s.Prefix, store.PrefixEnd(s.Prefix)); err != nil {
			return fmt.Errorf("index %s backfill: %w", s.Name, err)
		}
		if _, err := tx.Exec(`INSERT OR REPLACE INTO index_specs (name, fingerprint) VALUES (?, ?)`, s.Name, s.fingerprint()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// dropUndeclared drops the index tables an earlier version declared and
// this one does not.
func dropUndeclared(tx *sql.Tx, specs []IndexSpec) error {
	declared := map[string]bool{}
	for _, s := range specs {
		declared[s.Name] = true
	}
	rows, err := tx.Query(`SELECT name FROM index_specs`)
	if err != nil {
		return err
	}
	var gone []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		if !declared[name] {
			gone = append(gone, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range gone {
		if _, err := tx.Exec("DROP TABLE IF EXISTS " + IndexSpec{Name: name}.Table()); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM index_specs WHERE name = ?`, name); err != nil {
			return err
		}
	}
	return nil
}
