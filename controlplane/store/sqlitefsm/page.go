package sqlitefsm

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// Reader is the read side of a State that index queries use.
type Reader interface {
	ReadTx(ctx context.Context, fn func(tx *sql.Tx, revision int64) error) error
}

// IndexPage is one page of records found through an index table: the
// filters (SQL conditions on the index alias i, with their arguments) select
// rows, order sorts them, and each row's kv value is decoded into a T. It
// returns the page and the total number of matching rows, both read in one
// transaction so they agree.
func IndexPage[T any](ctx context.Context, r Reader, table string, filters []string, args []any, order string, page, size int) ([]T, int64, error) {
	cond := ""
	if len(filters) > 0 {
		cond = " WHERE " + strings.Join(filters, " AND ")
	}
	var out []T
	var total int64
	err := r.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+table+" i"+cond, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT kv.value FROM %s i JOIN kv ON kv.key = i.key%s ORDER BY %s LIMIT %d OFFSET %d",
			table, cond, order, size, (page-1)*size), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			var v T
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, total, err
}
