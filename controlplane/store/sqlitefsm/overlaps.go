package sqlitefsm

import (
	"fmt"
	"slices"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// overlaps renders query.Overlaps: start < to AND end > from, and start at
// least from minus the longest span among the rows that can match. A tree
// led by start then reads only the rows that began in [from - longest,
// to), all of which can meet the range, instead of every row that began
// before to (or before from minus a guessed cap). The longest span is read
// from a tree in the same statement, so it belongs to the same snapshot:
// from the composite (column, span) of a column the query's own Eq
// conditions fix (one stream's longest file, not the longest anywhere),
// else from the span's own tree. Any upper bound keeps the answer exact;
// the tighter it is, the fewer rows are read.
func overlaps(s IndexSpec, c query.Cond, top []query.Cond) (string, []any, error) {
	if len(c.Values) != 2 || len(c.With) != 2 {
		return "", nil, fmt.Errorf("%w: Overlaps takes start, end, span, from and to", query.ErrBadQuery)
	}
	from, ok := c.Values[0].(int64)
	to, ok2 := c.Values[1].(int64)
	if !ok || !ok2 {
		return "", nil, fmt.Errorf("%w: Overlaps takes int64 bounds", query.ErrBadQuery)
	}
	startCol, endCol, spanCol := declared(s, c.Column), declared(s, c.With[0]), declared(s, c.With[1])
	if startCol == nil || endCol == nil || spanCol == nil {
		return "", nil, fmt.Errorf("%w: index %q has no columns %s, %s, %s", query.ErrBadQuery, s.Name, c.Column, c.With[0], c.With[1])
	}
	// The bound is only sound if span is end - start of the same record.
	if spanCol.Path != endCol.Path || spanCol.MinusPath != startCol.Path || startCol.MinusPath != "" || endCol.MinusPath != "" {
		return "", nil, fmt.Errorf("%w: index %q: %s is not declared as %s minus %s", query.ErrBadQuery, s.Name, spanCol.Name, endCol.Name, startCol.Name)
	}
	longest := "SELECT max(j." + spanCol.Name + ") FROM " + tableOf(s) + " j"
	args := []any{to, from, from}
	if eq, ok := spanScope(s, spanCol.Name, top); ok {
		longest += " WHERE j." + eq.Column + " = ?"
		args = append(args, eq.Values[0])
	}
	start, end := "i."+startCol.Name, "i."+endCol.Name
	// max(..., 0): a scope whose rows all end before they start has no
	// positive span, and every row that can match began after from.
	return fmt.Sprintf("(%s < ? AND %s > ? AND %s >= ? - max(coalesce((%s), 0), 0))", start, end, start, longest), args, nil
}

// declared is the column of s named name, nil when there is none.
func declared(s IndexSpec, name string) *IndexColumn {
	i := slices.IndexFunc(s.Columns, func(c IndexColumn) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &s.Columns[i]
}

// spanScope is the first of the query's own Eq conditions on a column that
// leads a composite tree (column, span): every matching row has that value,
// so the longest span among the rows with it bounds theirs, and the tree
// finds it in one step.
func spanScope(s IndexSpec, span string, top []query.Cond) (query.Cond, bool) {
	for _, c := range top {
		if c.Op != query.OpEq || len(c.Values) != 1 {
			continue
		}
		for _, tree := range s.Composite {
			if len(tree) >= 2 && tree[0] == c.Column && tree[1] == span {
				return c, true
			}
		}
	}
	return query.Cond{}, false
}
