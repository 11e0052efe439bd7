// Package query is how domain packages find records by something other
// than their key. A domain declares an Index (typed columns extracted from
// its JSON records) and asks for rows through a Reader with typed
// conditions, an order and a page; it never writes SQL. The embedded store
// (sqlitefsm) keeps each index as a table maintained in the same
// transaction as the record and is the only place that turns a Query into
// SQL, so another backend can answer the same Queries.
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Index declares a typed index over the records under Prefix. Every key
// under Prefix whose value is a JSON object gets one index row holding the
// declared columns; the row changes in the same transaction as the record.
type Index struct {
	// Name identifies the index in Queries: lower case letters, digits and _.
	Name    string
	Prefix  string
	Columns []Column
	// Composite lists search trees over several columns, each the columns'
	// names in order: the ones a query compares for equality first, then
	// the one it ranges over or orders by. A query for one stream's files
	// in a time range ordered by start, say, reads only its own rows
	// through (stream_id, start_ms), where single-column trees make it
	// scan every file of the range or every file of the stream.
	Composite [][]string
}

// Type is a column's value type.
type Type string

// Column types.
const (
	Text    Type = "TEXT"
	Integer Type = "INTEGER"
	Real    Type = "REAL"
)

// Column maps a JSON path of the stored value to a typed column.
type Column struct {
	// Name is how Conds and Orders refer to the column; "key" is the
	// record's key and is always present.
	Name string
	Type Type
	// Path is the JSON path of the value, such as $.username.
	Path string
	// NoIndex keeps the column for filtering by scanning the index rows
	// (substring searches, yes/no flags) without a search tree of its own,
	// which every new record would otherwise have to write.
	NoIndex bool
	// MinusPath, when set, makes the column the number at Path minus the
	// number at MinusPath: an interval's length from its two ends, which
	// Overlaps reads to bound its scan (NULL when either is missing).
	MinusPath string
}

// Key is the column every index has: the record's key.
const Key = "key"

// Op is a condition's comparison.
type Op int

// Comparisons. Contains and Prefix compare text without regard to ASCII
// case, as a search box does.
const (
	OpEq Op = iota
	OpNe
	OpIn
	OpNotIn
	OpLt
	OpLe
	OpGt
	OpGe
	OpPrefix
	OpContains
	OpIsNull
	OpNotNull
	OpAnyOf // any of Any holds
	OpAllOf // every one of Any holds
	OpOverlaps
)

// Cond is one condition on an index row. Build them with the functions
// below; a Query's conditions must all hold.
type Cond struct {
	Column string
	Op     Op
	Values []any
	Any    []Cond
	// With names the other columns a condition reads (Overlaps: the end
	// and the span).
	With []string
}

// Eq holds when column equals v.
func Eq(column string, v any) Cond { return Cond{Column: column, Op: OpEq, Values: []any{v}} }

// Ne holds when column is set and differs from v.
func Ne(column string, v any) Cond { return Cond{Column: column, Op: OpNe, Values: []any{v}} }

// In holds when column equals one of vs (an empty vs matches nothing).
func In[T any](column string, vs ...T) Cond {
	return Cond{Column: column, Op: OpIn, Values: anys(vs)}
}

// NotIn holds when column is set and equals none of vs.
func NotIn[T any](column string, vs ...T) Cond {
	return Cond{Column: column, Op: OpNotIn, Values: anys(vs)}
}

// Lt holds when column < v.
func Lt(column string, v any) Cond { return Cond{Column: column, Op: OpLt, Values: []any{v}} }

// Le holds when column <= v.
func Le(column string, v any) Cond { return Cond{Column: column, Op: OpLe, Values: []any{v}} }

// Gt holds when column > v.
func Gt(column string, v any) Cond { return Cond{Column: column, Op: OpGt, Values: []any{v}} }

// Ge holds when column >= v.
func Ge(column string, v any) Cond { return Cond{Column: column, Op: OpGe, Values: []any{v}} }

// Prefix holds when the text column starts with s.
func Prefix(column, s string) Cond { return Cond{Column: column, Op: OpPrefix, Values: []any{s}} }

// Contains holds when the text column contains s.
func Contains(column, s string) Cond { return Cond{Column: column, Op: OpContains, Values: []any{s}} }

// IsNull holds when the record has no value at the column's path.
func IsNull(column string) Cond { return Cond{Column: column, Op: OpIsNull} }

// NotNull holds when the record has a value at the column's path.
func NotNull(column string) Cond { return Cond{Column: column, Op: OpNotNull} }

// Overlaps holds when a row's interval [start, end) meets [from, to):
// start < to and end > from. span names the column declared as end minus
// start (Path of end, MinusPath of start). The store bounds start from
// below by from minus the longest span among the rows that can match (of
// the stream or channel an Eq of the same query names, when a composite
// tree (that column, span) exists, else of the whole index), so a range
// scan of start reads only rows that can meet the range, however long the
// longest interval anywhere could be.
func Overlaps(start, end, span string, from, to int64) Cond {
	return Cond{Column: start, Op: OpOverlaps, Values: []any{from, to}, With: []string{end, span}}
}

// AnyOf holds when at least one of cs holds.
func AnyOf(cs ...Cond) Cond { return Cond{Op: OpAnyOf, Any: cs} }

// AllOf holds when every one of cs holds (to group conditions inside AnyOf).
func AllOf(cs ...Cond) Cond { return Cond{Op: OpAllOf, Any: cs} }

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// Where collects conditions, skipping the filters a caller left unset.
type Where []Cond

// Add appends conditions.
func (w *Where) Add(cs ...Cond) { *w = append(*w, cs...) }

// EqIfSet adds Eq(column, v) unless v is empty.
func (w *Where) EqIfSet(column, v string) {
	if v != "" {
		w.Add(Eq(column, v))
	}
}

// BoolIfSet adds Eq(column, *v) unless v is nil.
func (w *Where) BoolIfSet(column string, v *bool) {
	if v != nil {
		w.Add(Eq(column, *v))
	}
}

// Order sorts by one column; rows equal in every Order are sorted by key in
// the direction of the last Order.
type Order struct {
	Column string
	Desc   bool
}

// Asc sorts by column, smallest first.
func Asc(column string) Order { return Order{Column: column} }

// Desc sorts by column, largest first.
func Desc(column string) Order { return Order{Column: column, Desc: true} }

// Query selects index rows and the records they point at.
type Query struct {
	Index string
	Where []Cond
	Order []Order
	// Limit caps the rows (0: no cap); Offset skips rows first. The store
	// pages the keys through the index alone and reads only the records of
	// the page, so a deep page costs about what the first does.
	Limit, Offset int
	// Using names the column whose search tree should find the rows when
	// the store could otherwise pick a worse one (a range on a time column
	// beside an equality on a state most rows share); the other
	// conditions then only filter.
	Using string
}

// Row is one record found.
type Row struct {
	Key            string
	CreateRevision int64
	ModRevision    int64
	Value          []byte
}

// Reader answers Queries from one consistent state of the store.
type Reader interface {
	// View runs fn on a snapshot: every read through v sees the same
	// applied revision.
	View(ctx context.Context, fn func(v View) error) error
}

// View is a snapshot of the indexes.
type View interface {
	// Revision is the store revision the snapshot holds.
	Revision() int64
	// Find returns the rows q selects with their records.
	Find(q Query) ([]Row, error)
	// Keys returns only the keys q selects.
	Keys(q Query) ([]string, error)
	// Count is how many rows match.
	Count(index string, where ...Cond) (int64, error)
	// CountBy counts the matching rows per value of column (the value
	// formatted as text; a missing value counts under "").
	CountBy(index, column string, where ...Cond) (map[string]int64, error)
	// Min is the smallest non-null value of an integer column among the
	// matching rows, and false when there is none.
	Min(index, column string, where ...Cond) (int64, bool, error)
	// Span is the average and the largest of to - from over the matching
	// rows where both integer columns are set (zeros when there is none).
	Span(index, from, to string, where ...Cond) (avg float64, largest int64, err error)
	// Get reads records by key, indexed or not; absent keys are left out.
	Get(keys ...string) ([]Row, error)
	// Scan calls fn with every record under prefix, in key order, whether
	// or not an index covers it.
	Scan(prefix string, fn func(Row) error) error
	// Distinct returns the distinct tuples of columns among the matching
	// rows, each value formatted as text ("" when missing).
	Distinct(index string, columns []string, where ...Cond) ([][]string, error)
}

// ErrBadQuery is returned for a Query naming an unknown index or column or
// with a condition of the wrong shape: a programming error, never input.
var ErrBadQuery = errors.New("query: bad query")

// Decode reads a record into a T.
type Decode[T any] func(Row) (T, error)

// JSON decodes a record stored as JSON.
func JSON[T any](row Row) (T, error) {
	var v T
	if err := json.Unmarshal(row.Value, &v); err != nil {
		return v, fmt.Errorf("stored record %s: %w", row.Key, err)
	}
	return v, nil
}

// Page returns one page (1-based) of the records q selects, decoded by
// decode, and how many rows match in total, both from one snapshot.
func Page[T any](ctx context.Context, r Reader, q Query, page, size int, decode Decode[T]) ([]T, int64, error) {
	if page < 1 {
		page = 1
	}
	q.Limit, q.Offset = size, (page-1)*size
	var out []T
	var total int64
	err := r.View(ctx, func(v View) error {
		var err error
		if total, err = v.Count(q.Index, q.Where...); err != nil {
			return err
		}
		if size < 1 || q.Offset >= int(total) {
			return nil
		}
		// A page in the second half is read from the end: the reversed
		// order skips fewer rows, so the last page costs what the first
		// does.
		reversed := q.Offset > int(total)/2
		if reversed {
			q = reverse(q, int(total))
		}
		rows, err := v.Find(q)
		if err != nil {
			return err
		}
		if reversed {
			slices.Reverse(rows)
		}
		out, err = decodeAll(rows, decode)
		return err
	})
	return out, total, err
}

// reverse is q over the same rows in the opposite order: every order
// flipped (the key, which breaks ties in the direction of the last order,
// flips with them) and the window counted from the other end.
func reverse(q Query, total int) Query {
	orders := q.Order
	if len(orders) == 0 {
		orders = []Order{Asc(Key)}
	}
	flipped := make([]Order, len(orders))
	for i, o := range orders {
		flipped[i] = Order{Column: o.Column, Desc: !o.Desc}
	}
	end := min(q.Offset+q.Limit, total)
	q.Order, q.Offset, q.Limit = flipped, total-end, end-q.Offset
	return q
}

// All returns every record q selects (up to q.Limit when set).
func All[T any](ctx context.Context, r Reader, q Query, decode Decode[T]) ([]T, error) {
	var out []T
	err := r.View(ctx, func(v View) error {
		rows, err := v.Find(q)
		if err != nil {
			return err
		}
		out, err = decodeAll(rows, decode)
		return err
	})
	return out, err
}

// First returns the first record q selects, and false when none matches.
func First[T any](ctx context.Context, r Reader, q Query, decode Decode[T]) (T, bool, error) {
	q.Limit = 1
	var zero T
	out, err := All(ctx, r, q, decode)
	if err != nil || len(out) == 0 {
		return zero, false, err
	}
	return out[0], true, nil
}

func decodeAll[T any](rows []Row, decode Decode[T]) ([]T, error) {
	out := make([]T, 0, len(rows))
	for _, row := range rows {
		v, err := decode(row)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", row.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}
