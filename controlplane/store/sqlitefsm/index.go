package sqlitefsm

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// IndexSpec is a query.Index: each is kept as table idx_<Name> with one
// typed column per query.Column, maintained in the same SQLite transaction
// as the kv row, so a query on the index never sees a state the kv table
// does not have. Each column has a b-tree index of its own unless it is
// declared NoIndex, and each Composite list a b-tree over its columns.
//
// What a put costs here: a new key inserts its row and one entry into each
// column's b-tree, a page each; an update writes only the columns whose
// value changed (and nothing when none did), since SQLite rewrites every
// b-tree of a column named in an UPDATE even when its value stays.
type IndexSpec = query.Index

// IndexColumn is a query.Column.
type IndexColumn = query.Column

// maxColumns bounds the columns of one index (a change mask is a uint64).
const maxColumns = 63

// tableOf is the SQL table name of an index.
func tableOf(s IndexSpec) string { return "idx_" + s.Name }

var identRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
var pathRe = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

func validate(s IndexSpec) error {
	if !identRe.MatchString(s.Name) {
		return fmt.Errorf("index %q: name must match %s", s.Name, identRe)
	}
	if s.Prefix == "" || !strings.HasSuffix(s.Prefix, "/") {
		return fmt.Errorf("index %q: prefix must be non-empty and end with /", s.Name)
	}
	if len(s.Columns) > maxColumns {
		return fmt.Errorf("index %q: %d columns, at most %d", s.Name, len(s.Columns), maxColumns)
	}
	for _, c := range s.Columns {
		if !identRe.MatchString(c.Name) || c.Name == "key" || c.Name == "mod_revision" {
			return fmt.Errorf("index %q: bad column name %q", s.Name, c.Name)
		}
		switch c.Type {
		case query.Text, query.Integer, query.Real:
		default:
			return fmt.Errorf("index %q: column %q has type %q, want TEXT, INTEGER or REAL", s.Name, c.Name, c.Type)
		}
		if !pathRe.MatchString(c.Path) {
			return fmt.Errorf("index %q: column %q has bad JSON path %q", s.Name, c.Name, c.Path)
		}
		if c.MinusPath != "" && (!pathRe.MatchString(c.MinusPath) || c.Type == query.Text) {
			return fmt.Errorf("index %q: column %q: a difference needs a number type and a JSON path, got %s and %q", s.Name, c.Name, c.Type, c.MinusPath)
		}
	}
	for _, tree := range s.Composite {
		if len(tree) < 2 {
			return fmt.Errorf("index %q: composite %v needs two columns or more", s.Name, tree)
		}
		for _, name := range tree {
			if !slices.ContainsFunc(s.Columns, func(c query.Column) bool { return c.Name == name }) {
				return fmt.Errorf("index %q: composite %v names unknown column %q", s.Name, tree, name)
			}
		}
	}
	return nil
}

// indexLayout names the shape of the index tables this version writes; a
// new layout rebuilds every table at start (2: no mod_revision column,
// per-column b-trees optional).
const indexLayout = 2

func fingerprint(s IndexSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|layout %d", s.Name, s.Prefix, indexLayout)
	for _, c := range s.Columns {
		fmt.Fprintf(h, "|%s:%s:%s:%v", c.Name, c.Type, c.Path, c.NoIndex)
		if c.MinusPath != "" {
			fmt.Fprintf(h, ":-%s", c.MinusPath)
		}
	}
	for _, tree := range s.Composite {
		fmt.Fprintf(h, "|(%s)", strings.Join(tree, ","))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func createDDL(s IndexSpec) []string {
	cols := []string{"key TEXT PRIMARY KEY"}
	for _, c := range s.Columns {
		cols = append(cols, c.Name+" "+string(c.Type))
	}
	ddl := []string{fmt.Sprintf("CREATE TABLE %s (%s) WITHOUT ROWID", tableOf(s), strings.Join(cols, ", "))}
	for _, c := range s.Columns {
		if !c.NoIndex {
			ddl = append(ddl, fmt.Sprintf("CREATE INDEX %s_%s ON %s (%s)", tableOf(s), c.Name, tableOf(s), c.Name))
		}
	}
	for _, tree := range s.Composite {
		ddl = append(ddl, fmt.Sprintf("CREATE INDEX %s_c_%s ON %s (%s)", tableOf(s), strings.Join(tree, "_"), tableOf(s), strings.Join(tree, ", ")))
	}
	return ddl
}

// extract is the column's value in the JSON value argument v: values that
// are not valid JSON index as NULL instead of failing the transaction.
func extract(c IndexColumn, v string) string {
	value := fmt.Sprintf("json_extract(%s, '%s')", v, c.Path)
	if c.MinusPath != "" {
		value += fmt.Sprintf(" - json_extract(%s, '%s')", v, c.MinusPath)
	}
	return fmt.Sprintf("CASE WHEN json_valid(%s) THEN %s END", v, value)
}

// upsertSQL writes rows index rows from kv values, each given as two
// arguments (key, value).
func upsertSQL(s IndexSpec, rows int) string {
	names := []string{"key"}
	for _, c := range s.Columns {
		names = append(names, c.Name)
	}
	tuples := make([]string, rows)
	for r := range tuples {
		k, v := 2*r+1, 2*r+2
		vals := []string{fmt.Sprintf("?%d", k)}
		for _, c := range s.Columns {
			vals = append(vals, extract(c, fmt.Sprintf("?%d", v)))
		}
		tuples[r] = "(" + strings.Join(vals, ", ") + ")"
	}
	return fmt.Sprintf("INSERT OR REPLACE INTO %s (%s) VALUES %s", tableOf(s), strings.Join(names, ", "), strings.Join(tuples, ", "))
}

// changedSQL answers, for an old value ?1 and a new value ?2, the mask of
// the columns whose extracted value differs (bit i for column i).
func changedSQL(s IndexSpec) string {
	terms := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		terms[i] = fmt.Sprintf("((%s IS NOT %s) << %d)", extract(c, "?1"), extract(c, "?2"), i)
	}
	if len(terms) == 0 {
		return "SELECT 0"
	}
	return "SELECT " + strings.Join(terms, " | ")
}

// setColumnSQL sets column i of the row of key ?1 from the value ?2.
func setColumnSQL(s IndexSpec, i int) string {
	c := s.Columns[i]
	return fmt.Sprintf("UPDATE %s SET %s = %s WHERE key = ?1", tableOf(s), c.Name, extract(c, "?2"))
}

func backfillSQL(s IndexSpec) string {
	names := []string{"key"}
	vals := []string{"key"}
	for _, c := range s.Columns {
		names = append(names, c.Name)
		vals = append(vals, extract(c, "value"))
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM kv WHERE key >= ?1 AND key < ?2",
		tableOf(s), strings.Join(names, ", "), strings.Join(vals, ", "))
}

// IndexConsistency checks one index table against the kv table inside tx:
// missing counts records under the prefix without an index row, stale the
// index rows without a record or whose columns differ from the record's
// value.
func IndexConsistency(ctx context.Context, tx *sql.Tx, s IndexSpec) (missing, stale int64, err error) {
	q := fmt.Sprintf(`SELECT count(*) FROM kv WHERE key >= ? AND key < ? AND key NOT IN (SELECT key FROM %s)`, tableOf(s))
	if err := tx.QueryRowContext(ctx, q, s.Prefix, store.PrefixEnd(s.Prefix)).Scan(&missing); err != nil {
		return 0, 0, err
	}
	differs := []string{"kv.key IS NULL"}
	for _, c := range s.Columns {
		differs = append(differs, fmt.Sprintf("i.%s IS NOT %s", c.Name, extract(c, "kv.value")))
	}
	q = fmt.Sprintf(`SELECT count(*) FROM %s i LEFT JOIN kv ON kv.key = i.key WHERE %s`, tableOf(s), strings.Join(differs, " OR "))
	if err := tx.QueryRowContext(ctx, q).Scan(&stale); err != nil {
		return 0, 0, err
	}
	return missing, stale, nil
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
		if err == nil && fp == fingerprint(s) {
			continue
		}
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if _, err := tx.Exec("DROP TABLE IF EXISTS " + tableOf(s)); err != nil {
			return err
		}
		for _, ddl := range createDDL(s) {
			if _, err := tx.Exec(ddl); err != nil {
				return fmt.Errorf("index %s: %w", s.Name, err)
			}
		}
		if _, err := tx.Exec(backfillSQL(s), s.Prefix, store.PrefixEnd(s.Prefix)); err != nil {
			return fmt.Errorf("index %s backfill: %w", s.Name, err)
		}
		if _, err := tx.Exec(`INSERT OR REPLACE INTO index_specs (name, fingerprint) VALUES (?, ?)`, s.Name, fingerprint(s)); err != nil {
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
		if _, err := tx.Exec("DROP TABLE IF EXISTS " + tableOf(IndexSpec{Name: name})); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM index_specs WHERE name = ?`, name); err != nil {
			return err
		}
	}
	return nil
}
