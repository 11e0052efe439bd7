package sqlitefsm

import (
	"context"
	"database/sql"
	"fmt"
)

// SchemaObject is one table or index of the state database, as the schema
// audit shows it.
type SchemaObject struct {
	Name, Type, Table string
	DDL               string
	// RowCount and Columns are set for tables.
	RowCount *int64
	Columns  []SchemaColumn
}

// SchemaColumn is one column of a table.
type SchemaColumn struct {
	Name, Type          string
	NotNull, PrimaryKey bool
}

// Schema describes the state database: its page size, the result of
// SQLite's quick_check, and every table and index (tables first).
type Schema struct {
	PageSize  int64
	Integrity string
	Objects   []SchemaObject
}

// Inspect reads the schema of the state database.
func (s *State) Inspect(ctx context.Context) (Schema, error) {
	var out Schema
	err := s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&out.PageSize); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&out.Integrity); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, type, tbl_name, coalesce(sql, '') FROM sqlite_schema
			WHERE name NOT LIKE 'sqlite_%' ORDER BY type DESC, name`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var o SchemaObject
			if err := rows.Scan(&o.Name, &o.Type, &o.Table, &o.DDL); err != nil {
				rows.Close()
				return err
			}
			out.Objects = append(out.Objects, o)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for i := range out.Objects {
			if o := &out.Objects[i]; o.Type == "table" {
				if err := describeTable(ctx, tx, o); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

func describeTable(ctx context.Context, tx *sql.Tx, o *SchemaObject) error {
	var n int64
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM "%s"`, o.Name)).Scan(&n); err != nil {
		return err
	}
	o.RowCount = &n
	cols, err := tx.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, o.Name)
	if err != nil {
		return err
	}
	defer cols.Close()
	for cols.Next() {
		var c SchemaColumn
		var pk int
		if err := cols.Scan(&c.Name, &c.Type, &c.NotNull, &pk); err != nil {
			return err
		}
		c.PrimaryKey = pk > 0
		o.Columns = append(o.Columns, c)
	}
	return cols.Err()
}

// QuickCheck is SQLite's quick_check of the state database ("ok" when
// sound).
func (s *State) QuickCheck(ctx context.Context) (string, error) {
	var res string
	err := s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		return tx.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res)
	})
	return res, err
}

// IndexCheck is how one index agrees with the records it covers.
type IndexCheck struct {
	Name string
	// Missing counts records without an index row, Stale the index rows
	// without a record or whose columns differ from the record's value.
	Missing, Stale int64
}

// Migrations reports the schema version applied to the database and checks
// every declared index against the kv table, from one snapshot.
func (s *State) Migrations(ctx context.Context) (applied int32, indexes []IndexCheck, err error) {
	err = s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
			return err
		}
		for _, spec := range s.Specs() {
			missing, stale, err := IndexConsistency(ctx, tx, spec)
			if err != nil {
				return err
			}
			indexes = append(indexes, IndexCheck{Name: spec.Name, Missing: missing, Stale: stale})
		}
		return nil
	})
	return applied, indexes, err
}

// EachKey calls fn with every key of the store in order, from one snapshot.
func (s *State) EachKey(ctx context.Context, fn func(key string)) error {
	return s.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		rows, err := tx.QueryContext(ctx, `SELECT key FROM kv ORDER BY key`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			fn(k)
		}
		return rows.Err()
	})
}
