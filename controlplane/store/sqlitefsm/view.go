package sqlitefsm

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// View answers query.Queries from one read transaction: State is a
// query.Reader, and this file is where a Query becomes SQL.
func (s *State) View(ctx context.Context, fn func(v query.View) error) error {
	return s.ReadTx(ctx, func(tx *sql.Tx, rev int64) error {
		return fn(&view{ctx: ctx, tx: tx, rev: rev, specs: s.specs, stmts: s.rq})
	})
}

type view struct {
	ctx   context.Context
	tx    *sql.Tx
	rev   int64
	specs []IndexSpec
	stmts *stmtCache
}

// query runs a read through the statement cache, so database/sql does not
// prepare and finalize each query shape at every request. SQLite still
// parses a statement again when a bound value can change its plan (a
// condition on an indexed column), as a token lookup by digest does.
func (v *view) query(text string, args ...any) (*sql.Rows, error) {
	if st := v.stmts.dynamic(text); st != nil {
		return v.tx.StmtContext(v.ctx, st).QueryContext(v.ctx, args...)
	}
	return v.tx.QueryContext(v.ctx, text, args...)
}

func (v *view) queryRow(text string, args ...any) *sql.Row {
	if st := v.stmts.dynamic(text); st != nil {
		return v.tx.StmtContext(v.ctx, st).QueryRowContext(v.ctx, args...)
	}
	return v.tx.QueryRowContext(v.ctx, text, args...)
}

func (v *view) Revision() int64 { return v.rev }

// spec finds a declared index.
func (v *view) spec(name string) (IndexSpec, error) {
	for _, s := range v.specs {
		if s.Name == name {
			return s, nil
		}
	}
	return IndexSpec{}, fmt.Errorf("%w: no index %q", query.ErrBadQuery, name)
}

// column checks that name is a column of s (or the key).
func column(s IndexSpec, name string) (string, error) {
	if name == query.Key {
		return "i.key", nil
	}
	if c := declared(s, name); c != nil {
		return "i." + c.Name, nil
	}
	return "", fmt.Errorf("%w: index %q has no column %q", query.ErrBadQuery, s.Name, name)
}

// likeEscape makes v a literal inside a LIKE pattern (escape character \).
func likeEscape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(v)
}

// where renders conditions joined by AND, with their arguments.
// Conditions on columns other than using (when set) are written so that
// SQLite does not search by them (a unary + on the column).
func where(s IndexSpec, conds []query.Cond, using string) (string, []any, error) {
	if len(conds) == 0 {
		return "", nil, nil
	}
	parts := make([]string, 0, len(conds))
	var args []any
	for _, c := range conds {
		sqlText, a, err := cond(s, c, conds)
		if err != nil {
			return "", nil, err
		}
		if using != "" && c.Column != using && c.Op != query.OpAnyOf && c.Op != query.OpAllOf {
			sqlText = "+" + sqlText
		}
		parts = append(parts, sqlText)
		args = append(args, a...)
	}
	return " WHERE " + strings.Join(parts, " AND "), args, nil
}

var comparisons = map[query.Op]string{query.OpEq: "=", query.OpNe: "!=", query.OpLt: "<", query.OpLe: "<=", query.OpGt: ">", query.OpGe: ">="}

// cond renders one condition; top are the query's conditions (an Overlaps
// takes its bound's scope from them).
func cond(s IndexSpec, c query.Cond, top []query.Cond) (string, []any, error) {
	if c.Op == query.OpOverlaps {
		return overlaps(s, c, top)
	}
	if c.Op == query.OpAnyOf || c.Op == query.OpAllOf {
		joiner, empty := " OR ", "0"
		if c.Op == query.OpAllOf {
			joiner, empty = " AND ", "1"
		}
		if len(c.Any) == 0 {
			return empty, nil, nil
		}
		parts := make([]string, 0, len(c.Any))
		var args []any
		for _, sub := range c.Any {
			sqlText, a, err := cond(s, sub, top)
			if err != nil {
				return "", nil, err
			}
			parts = append(parts, sqlText)
			args = append(args, a...)
		}
		return "(" + strings.Join(parts, joiner) + ")", args, nil
	}
	col, err := column(s, c.Column)
	if err != nil {
		return "", nil, err
	}
	one := func() (any, error) {
		if len(c.Values) != 1 {
			return nil, fmt.Errorf("%w: %s takes one value, got %d", query.ErrBadQuery, c.Column, len(c.Values))
		}
		return c.Values[0], nil
	}
	switch c.Op {
	case query.OpEq, query.OpNe, query.OpLt, query.OpLe, query.OpGt, query.OpGe:
		v, err := one()
		return col + " " + comparisons[c.Op] + " ?", []any{v}, err
	case query.OpIn, query.OpNotIn:
		if len(c.Values) == 0 {
			if c.Op == query.OpIn {
				return "0", nil, nil
			}
			return col + " IS NOT NULL", nil, nil
		}
		not := ""
		if c.Op == query.OpNotIn {
			not = "NOT "
		}
		return col + " " + not + "IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(c.Values)), ", ") + ")", c.Values, nil
	case query.OpPrefix, query.OpContains:
		v, err := one()
		if err != nil {
			return "", nil, err
		}
		text, ok := v.(string)
		if !ok {
			return "", nil, fmt.Errorf("%w: %s takes text", query.ErrBadQuery, c.Column)
		}
		pattern := likeEscape(text) + "%"
		if c.Op == query.OpContains {
			pattern = "%" + pattern
		}
		return col + ` LIKE ? ESCAPE '\'`, []any{pattern}, nil
	case query.OpIsNull:
		return col + " IS NULL", nil, nil
	case query.OpNotNull:
		return col + " IS NOT NULL", nil, nil
	}
	return "", nil, fmt.Errorf("%w: unknown comparison %d", query.ErrBadQuery, c.Op)
}

// orderBy renders the order, with the key last as the tie-breaker.
func orderBy(s IndexSpec, orders []query.Order) (string, error) {
	parts := make([]string, 0, len(orders)+1)
	keyDir := " ASC"
	hasKey := false
	for _, o := range orders {
		col, err := column(s, o.Column)
		if err != nil {
			return "", err
		}
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		keyDir = dir
		hasKey = hasKey || o.Column == query.Key
		parts = append(parts, col+dir)
	}
	if !hasKey {
		parts = append(parts, "i.key"+keyDir)
	}
	return " ORDER BY " + strings.Join(parts, ", "), nil
}

// selectKeys renders the keys q selects, in order, paged, and the ORDER
// BY clause it sorts them with.
func selectKeys(s IndexSpec, q query.Query) (text string, args []any, order string, err error) {
	return selectFrom(s, q, "SELECT i.key FROM "+tableOf(s)+" i")
}

// selectFrom renders q's conditions, order and window after head, a
// SELECT from the index table named i.
func selectFrom(s IndexSpec, q query.Query, head string) (text string, args []any, order string, err error) {
	if q.Using != "" {
		if _, err := column(s, q.Using); err != nil {
			return "", nil, "", err
		}
	}
	cond, args, err := where(s, q.Where, q.Using)
	if err != nil {
		return "", nil, "", err
	}
	if order, err = orderBy(s, q.Order); err != nil {
		return "", nil, "", err
	}
	text = head + cond + order
	switch {
	case q.Limit > 0:
		// Limit and offset are arguments, so every page of one listing
		// runs the same prepared statement.
		text += " LIMIT ? OFFSET ?"
		args = append(args, q.Limit, max(q.Offset, 0))
	case q.Offset > 0:
		text += " LIMIT -1 OFFSET ?"
		args = append(args, q.Offset)
	}
	return text, args, order, nil
}

func (v *view) Keys(q query.Query) ([]string, error) {
	s, err := v.spec(q.Index)
	if err != nil {
		return nil, err
	}
	text, args, _, err := selectKeys(s, q)
	if err != nil {
		return nil, err
	}
	rows, err := v.query(text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Find pages the keys through the index table alone and joins only the
// page's keys with the kv table, so skipping rows never reads their
// records (the index rows it skips still hold every column: query.Page
// reads a deep page from the nearer end).
func (v *view) Find(q query.Query) ([]query.Row, error) {
	s, err := v.spec(q.Index)
	if err != nil {
		return nil, err
	}
	const columns = "SELECT kv.key, kv.create_revision, kv.mod_revision, kv.value FROM "
	var text string
	var args []any
	if q.Offset > 0 {
		keys, keyArgs, order, err := selectKeys(s, q)
		if err != nil {
			return nil, err
		}
		text, args = columns+tableOf(s)+" i JOIN kv ON kv.key = i.key WHERE i.key IN ("+keys+")"+order, keyArgs
	} else if text, args, _, err = selectFrom(s, q, columns+tableOf(s)+" i JOIN kv ON kv.key = i.key"); err != nil {
		// With nothing to skip, one join is cheaper than paging the keys
		// first (SQLite builds the key list as a temporary table).
		return nil, err
	}
	rows, err := v.query(text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []query.Row
	for rows.Next() {
		var r query.Row
		if err := rows.Scan(&r.Key, &r.CreateRevision, &r.ModRevision, &r.Value); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (v *view) Span(index, from, to string, conds ...query.Cond) (float64, int64, error) {
	s, err := v.spec(index)
	if err != nil {
		return 0, 0, err
	}
	a, err := column(s, from)
	if err != nil {
		return 0, 0, err
	}
	b, err := column(s, to)
	if err != nil {
		return 0, 0, err
	}
	cond, args, err := where(s, append(conds, query.NotNull(from), query.Gt(to, 0)), "")
	if err != nil {
		return 0, 0, err
	}
	var avg sql.NullFloat64
	var largest sql.NullInt64
	err = v.queryRow("SELECT avg("+b+" - "+a+"), max("+b+" - "+a+") FROM "+tableOf(s)+" i"+cond, args...).Scan(&avg, &largest)
	return avg.Float64, largest.Int64, err
}

// maxGet bounds the keys of one statement (SQLite's variable limit is
// far above it).
const maxGet = 500

func (v *view) Get(keys ...string) ([]query.Row, error) {
	var out []query.Row
	for len(keys) > 0 {
		n := min(len(keys), maxGet)
		args := make([]any, n)
		for i, k := range keys[:n] {
			args[i] = k
		}
		keys = keys[n:]
		// One text per key count: not worth a slot in the statement cache.
		rows, err := v.tx.QueryContext(v.ctx, "SELECT key, create_revision, mod_revision, value FROM kv WHERE key IN (?"+
			strings.Repeat(",?", n-1)+") ORDER BY key", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var r query.Row
			if err := rows.Scan(&r.Key, &r.CreateRevision, &r.ModRevision, &r.Value); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (v *view) Scan(prefix string, fn func(query.Row) error) error {
	rows, err := v.query(`SELECT key, create_revision, mod_revision, value FROM kv WHERE key >= ? AND key < ? ORDER BY key`,
		prefix, store.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r query.Row
		if err := rows.Scan(&r.Key, &r.CreateRevision, &r.ModRevision, &r.Value); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (v *view) Count(index string, conds ...query.Cond) (int64, error) {
	s, err := v.spec(index)
	if err != nil {
		return 0, err
	}
	cond, args, err := where(s, conds, "")
	if err != nil {
		return 0, err
	}
	var n int64
	err = v.queryRow("SELECT count(*) FROM "+tableOf(s)+" i"+cond, args...).Scan(&n)
	return n, err
}

func (v *view) CountBy(index, name string, conds ...query.Cond) (map[string]int64, error) {
	s, err := v.spec(index)
	if err != nil {
		return nil, err
	}
	col, err := column(s, name)
	if err != nil {
		return nil, err
	}
	cond, args, err := where(s, conds, "")
	if err != nil {
		return nil, err
	}
	rows, err := v.query("SELECT coalesce(CAST("+col+" AS TEXT), ''), count(*) FROM "+tableOf(s)+" i"+cond+" GROUP BY 1", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] += n
	}
	return out, rows.Err()
}

func (v *view) Min(index, name string, conds ...query.Cond) (int64, bool, error) {
	s, err := v.spec(index)
	if err != nil {
		return 0, false, err
	}
	col, err := column(s, name)
	if err != nil {
		return 0, false, err
	}
	cond, args, err := where(s, conds, "")
	if err != nil {
		return 0, false, err
	}
	var m sql.NullInt64
	err = v.queryRow("SELECT min("+col+") FROM "+tableOf(s)+" i"+cond, args...).Scan(&m)
	return m.Int64, m.Valid, err
}

func (v *view) Distinct(index string, names []string, conds ...query.Cond) ([][]string, error) {
	s, err := v.spec(index)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: Distinct of no columns", query.ErrBadQuery)
	}
	cols := make([]string, len(names))
	for i, n := range names {
		col, err := column(s, n)
		if err != nil {
			return nil, err
		}
		cols[i] = "coalesce(CAST(" + col + " AS TEXT), '')"
	}
	cond, args, err := where(s, conds, "")
	if err != nil {
		return nil, err
	}
	rows, err := v.query("SELECT DISTINCT "+strings.Join(cols, ", ")+" FROM "+tableOf(s)+" i"+cond, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		tuple := make([]string, len(names))
		ptrs := make([]any, len(names))
		for i := range tuple {
			ptrs[i] = &tuple[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, tuple)
	}
	return out, rows.Err()
}
