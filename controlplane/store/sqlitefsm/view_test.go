package sqlitefsm

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/test/testkit"
)

type item struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Size    int    `json:"size"`
	Start   int    `json:"start,omitempty"`
	End     int    `json:"end,omitempty"`
	Enabled bool   `json:"enabled"`
}

var itemIndex = query.Index{Name: "items", Prefix: "/items/", Columns: []query.Column{
	{Name: "name", Type: query.Text, Path: "$.name", NoIndex: true},
	{Name: "state", Type: query.Text, Path: "$.state"},
	{Name: "size", Type: query.Integer, Path: "$.size"},
	{Name: "start_ms", Type: query.Integer, Path: "$.start", NoIndex: true},
	{Name: "end_ms", Type: query.Integer, Path: "$.end", NoIndex: true},
	{Name: "enabled", Type: query.Integer, Path: "$.enabled", NoIndex: true},
}}

func itemHarness(t *testing.T) *harness {
	h := newHarness(t, itemIndex)
	items := []item{
		{Name: "alpha", State: "on", Size: 3, Start: 10, End: 25, Enabled: true},
		{Name: "beta_1", State: "off", Size: 1, Start: 10, End: 15},
		{Name: "Gamma%", State: "on", Size: 2, Enabled: true},
		{Name: "delta", State: "gone", Size: 5, Start: 20, End: 60},
		{Name: "beta", State: "on", Size: 4, Enabled: true},
	}
	for i, it := range items {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/items/%02d", i), mustJSON(t, it))}})
	}
	// A record outside the prefix is never found; one without the indexed
	// fields has NULL columns.
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/items/zz", []byte(`{}`)), store.Put("/other/1", mustJSON(t, items[0]))}})
	return h
}

func names(t *testing.T, h *harness, q query.Query) []string {
	t.Helper()
	got, err := query.All(context.Background(), h.s, q, query.JSON[item])
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	out := []string{}
	for _, it := range got {
		out = append(out, it.Name)
	}
	return out
}

// Every kind of condition, order and page a domain can ask for, answered
// by the embedded store.
func TestQueriesSelectOrderAndPage(t *testing.T) {
	h := itemHarness(t)
	q := func(where ...query.Cond) query.Query {
		return query.Query{Index: "items", Where: where, Order: []query.Order{query.Asc(query.Key)}}
	}
	cases := []struct {
		name string
		q    query.Query
		want []string
	}{
		{"all", q(), []string{"alpha", "beta_1", "Gamma%", "delta", "beta", ""}},
		{"eq", q(query.Eq("state", "on")), []string{"alpha", "Gamma%", "beta"}},
		{"ne", q(query.Ne("state", "on")), []string{"beta_1", "delta"}},
		{"in", q(query.In("state", "off", "gone")), []string{"beta_1", "delta"}},
		{"empty in matches nothing", q(query.In[string]("state")), []string{}},
		{"not in", q(query.NotIn("state", "on")), []string{"beta_1", "delta"}},
		{"range", q(query.Gt("size", 1), query.Le("size", 4)), []string{"alpha", "Gamma%", "beta"}},
		{"bool", q(query.Eq("enabled", true)), []string{"alpha", "Gamma%", "beta"}},
		{"prefix", q(query.Prefix("name", "bet")), []string{"beta_1", "beta"}},
		{"contains takes _ and % literally", q(query.Contains("name", "a_")), []string{"beta_1"}},
		{"contains ignores ASCII case", q(query.Contains("name", "gamma%")), []string{"Gamma%"}},
		{"null", q(query.IsNull("start_ms"), query.NotNull("state")), []string{"Gamma%", "beta"}},
		{"any of", q(query.AnyOf(query.Eq("size", 1), query.AllOf(query.Eq("state", "on"), query.Ge("size", 4)))), []string{"beta_1", "beta"}},
		{"key range", q(query.Ge(query.Key, "/items/01"), query.Lt(query.Key, "/items/03")), []string{"beta_1", "Gamma%"}},
		{"order desc, key breaks ties", query.Query{Index: "items", Where: []query.Cond{query.NotNull("state")},
			Order: []query.Order{query.Desc("state")}}, []string{"beta", "Gamma%", "alpha", "beta_1", "delta"}},
		{"limit and offset", query.Query{Index: "items", Where: []query.Cond{query.NotNull("size")}, Order: []query.Order{query.Asc("size")},
			Limit: 2, Offset: 1}, []string{"Gamma%", "alpha"}},
		{"using another column's tree gives the same rows", query.Query{Index: "items", Where: []query.Cond{query.Eq("state", "on"),
			query.Ge("size", 2)}, Order: []query.Order{query.Asc("size")}, Using: "size"}, []string{"Gamma%", "alpha", "beta"}},
	}
	for _, c := range cases {
		if got := names(t, h, c.q); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPageCountsAndDecodes(t *testing.T) {
	h := itemHarness(t)
	ctx := context.Background()
	q := query.Query{Index: "items", Where: []query.Cond{query.NotNull("state")}, Order: []query.Order{query.Asc("size")}}
	var seen []string
	for page := 1; page <= 3; page++ {
		rows, total, err := query.Page(ctx, h.s, q, page, 2, query.JSON[item])
		if err != nil || total != 5 {
			t.Fatalf("page %d: total %d, %v", page, total, err)
		}
		for _, r := range rows {
			seen = append(seen, r.Name)
		}
	}
	if want := []string{"beta_1", "Gamma%", "alpha", "beta", "delta"}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("pages %q, want %q", seen, want)
	}
	rows, total, err := query.Page(ctx, h.s, q, 9, 2, query.JSON[item])
	if err != nil || total != 5 || len(rows) != 0 {
		t.Fatalf("past the end: %v %d %v", rows, total, err)
	}
	first, ok, err := query.First(ctx, h.s, query.Query{Index: "items", Where: []query.Cond{query.Eq("name", "delta")}}, query.JSON[item])
	if err != nil || !ok || first.Size != 5 {
		t.Fatalf("first: %+v %v %v", first, ok, err)
	}
	if _, ok, err := query.First(ctx, h.s, query.Query{Index: "items", Where: []query.Cond{query.Eq("name", "nobody")}}, query.JSON[item]); ok || err != nil {
		t.Fatalf("first of nothing: %v %v", ok, err)
	}
}

func TestViewAggregates(t *testing.T) {
	h := itemHarness(t)
	err := h.s.View(context.Background(), func(v query.View) error {
		if v.Revision() == 0 {
			t.Error("no revision")
		}
		if n, err := v.Count("items", query.Eq("state", "on")); n != 3 || err != nil {
			t.Errorf("count %d %v", n, err)
		}
		by, err := v.CountBy("items", "state")
		if want := map[string]int64{"on": 3, "off": 1, "gone": 1, "": 1}; err != nil || !reflect.DeepEqual(by, want) {
			t.Errorf("count by %v %v", by, err)
		}
		if m, ok, err := v.Min("items", "start_ms"); m != 10 || !ok || err != nil {
			t.Errorf("min %d %v %v", m, ok, err)
		}
		if _, ok, err := v.Min("items", "start_ms", query.Eq("state", "on"), query.IsNull("start_ms")); ok || err != nil {
			t.Errorf("min of nothing %v %v", ok, err)
		}
		avg, largest, err := v.Span("items", "start_ms", "end_ms")
		if avg != 20 || largest != 40 || err != nil {
			t.Errorf("span %v %v %v", avg, largest, err)
		}
		d, err := v.Distinct("items", []string{"state", "enabled"}, query.NotNull("state"))
		if err != nil || len(d) != 3 {
			t.Errorf("distinct %v %v", d, err)
		}
		keys, err := v.Keys(query.Query{Index: "items", Where: []query.Cond{query.Eq("state", "off")}})
		if err != nil || !reflect.DeepEqual(keys, []string{"/items/01"}) {
			t.Errorf("keys %v %v", keys, err)
		}
		got, err := v.Get("/items/03", "/missing", "/other/1")
		if err != nil || len(got) != 2 || got[0].Key != "/items/03" || got[0].CreateRevision == 0 || got[1].Key != "/other/1" {
			t.Errorf("get %+v %v", got, err)
		}
		var scanned []string
		err = v.Scan("/items/", func(r query.Row) error { scanned = append(scanned, r.Key); return nil })
		if err != nil || len(scanned) != 6 {
			t.Errorf("scan %v %v", scanned, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A query naming what the index does not declare is refused, never sent
// to SQLite as text.
func TestBadQueriesAreRefused(t *testing.T) {
	h := itemHarness(t)
	ctx := context.Background()
	for _, q := range []query.Query{
		{Index: "nope"},
		{Index: "items", Where: []query.Cond{query.Eq("name; DROP TABLE kv", 1)}},
		{Index: "items", Order: []query.Order{query.Asc("size DESC")}},
		{Index: "items", Using: "missing"},
		{Index: "items", Where: []query.Cond{{Column: "size", Op: query.OpEq}}},
		{Index: "items", Where: []query.Cond{query.Contains("name", "x"), {Column: "name", Op: query.OpPrefix, Values: []any{3}}}},
	} {
		if _, err := query.All(ctx, h.s, q, query.JSON[item]); !errors.Is(err, query.ErrBadQuery) {
			t.Errorf("%+v: %v, want ErrBadQuery", q, err)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Pages in the second half are read from the end (query.Page reverses the
// order); every page size must still give the rows of All in its order,
// ties on the order column included.
func TestDeepPagesMatchTheForwardOrder(t *testing.T) {
	h := itemHarness(t)
	ctx := context.Background()
	for _, order := range [][]query.Order{nil, {query.Desc("state")}, {query.Asc("enabled"), query.Desc("size")}} {
		q := query.Query{Index: "items", Order: order}
		want := names(t, h, q)
		for size := 1; size <= 4; size++ {
			var got []string
			for page := 1; len(got) < len(want); page++ {
				rows, total, err := query.Page(ctx, h.s, q, page, size, query.JSON[item])
				if err != nil || int(total) != len(want) || len(rows) == 0 {
					t.Fatalf("order %v size %d page %d: %d rows, total %d, %v", order, size, page, len(rows), total, err)
				}
				for _, r := range rows {
					got = append(got, r.Name)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("order %v size %d: pages give %q, want %q", order, size, got, want)
			}
		}
	}
}

// TestCompositeTreesServeEqualityThenRange: an index with a composite
// (stream, start_ms) answers "one stream, a time range, by start" from that
// tree alone, with neither a scan nor a sort, and gives the same rows as
// before; a composite naming an unknown column is refused at open.
func TestCompositeTreesServeEqualityThenRange(t *testing.T) {
	spec := query.Index{Name: "segs", Prefix: "/segs/", Columns: []query.Column{
		{Name: "stream", Type: query.Text, Path: "$.name"},
		{Name: "start_ms", Type: query.Integer, Path: "$.start"},
	}, Composite: [][]string{{"stream", "start_ms"}}}
	h := newHarness(t, spec)
	for i := range 200 {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/segs/%03d", i), mustJSON(t, item{Name: fmt.Sprintf("cam%d", i%4), Start: 1000 - i}))}})
	}
	q := query.Query{Index: "segs", Where: []query.Cond{query.Eq("stream", "cam1"), query.Ge("start_ms", 900), query.Lt("start_ms", 950)},
		Order: []query.Order{query.Asc("start_ms")}}
	joined := h.plan(spec, q)
	if !strings.Contains(joined, "idx_segs_c_stream_start_ms") || strings.Contains(joined, "TEMP B-TREE") {
		t.Fatalf("plan %q: want the composite tree and no sort", joined)
	}
	got, err := query.All(context.Background(), h.s, q, query.JSON[item])
	if err != nil || len(got) != 12 || got[0].Start != 903 || got[11].Start != 947 {
		t.Fatalf("%d rows %+v: %v", len(got), got, err)
	}
	bad := spec
	bad.Composite = [][]string{{"stream", "end_ms"}}
	if _, err := Open(filepath.Join(t.TempDir(), "state.db"), []IndexSpec{bad}); err == nil {
		t.Fatal("a composite over an unknown column was accepted")
	}
}

// TestListingShapesPreparedWithEveryConnectionHeld runs more concurrent
// listings than the read pool has connections, each of a shape never run
// before: preparing a new shape must not wait for a free connection while
// every caller holds one. Later runs of those shapes use the prepared
// statements, and their answers do not change.
func TestListingShapesPreparedWithEveryConnectionHeld(t *testing.T) {
	h := itemHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const callers = 48
	shape := func(i int) query.Query {
		values := make([]string, i%12+1) // one text per value count
		for j := range values {
			values[j] = fmt.Sprint("state-", j)
		}
		values[0] = "on"
		return query.Query{Index: itemIndex.Name, Where: []query.Cond{query.In("state", values...)}, Limit: i%4 + 1}
	}
	run := func() []int {
		counts := make([]int, callers)
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := h.s.View(ctx, func(v query.View) error {
					rows, err := v.Find(shape(i))
					counts[i] = len(rows)
					return err
				})
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return counts
	}
	first := run()
	for i, n := range first {
		if want := min(i%4+1, 3); n != want {
			t.Fatalf("shape %d found %d rows, want %d", i, n, want)
		}
	}
	testkit.Eventually(t, 30*time.Second, "the shapes prepared", func() bool {
		h.s.rq.mu.Lock()
		defer h.s.rq.mu.Unlock()
		prepared := 0
		for _, st := range h.s.rq.dyn {
			if st != nil {
				prepared++
			}
		}
		return prepared >= 12
	})
	if again := run(); !reflect.DeepEqual(again, first) {
		t.Fatalf("prepared statements answered %v, unprepared %v", again, first)
	}
}

// plan is SQLite's query plan of the keys q selects from spec, its steps
// joined with "; ".
func (h *harness) plan(spec IndexSpec, q query.Query) string {
	h.t.Helper()
	text, args, _, err := selectKeys(spec, q)
	if err != nil {
		h.t.Fatal(err)
	}
	var steps []string
	err = h.s.ReadTx(context.Background(), func(tx *sql.Tx, _ int64) error {
		rows, err := tx.Query("EXPLAIN QUERY PLAN "+text, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			steps = append(steps, detail)
		}
		return rows.Err()
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Join(steps, "; ")
}
