package sqlitefsm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

var spanIndex = query.Index{Name: "clips", Prefix: "/clips/", Columns: []query.Column{
	{Name: "stream", Type: query.Text, Path: "$.name", NoIndex: true},
	{Name: "start_ms", Type: query.Integer, Path: "$.start"},
	{Name: "end_ms", Type: query.Integer, Path: "$.end", NoIndex: true},
	{Name: "span_ms", Type: query.Integer, Path: "$.end", MinusPath: "$.start"},
}, Composite: [][]string{{"stream", "start_ms", "end_ms"}, {"stream", "span_ms"}}}

// TestOverlapsIsExactWithEveryIntervalLength: Overlaps finds exactly the
// rows whose [start, end) meets the range, for one stream and across
// streams, when one stream holds an interval far longer than the others
// (its bound is its own), and after a still longer one is added.
func TestOverlapsIsExactWithEveryIntervalLength(t *testing.T) {
	h := newHarness(t, spanIndex)
	rng := rand.New(rand.NewPCG(1, 2))
	var all []item
	add := func(it item) {
		all = append(all, it)
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/clips/%04d", len(all)), mustJSON(t, it))}})
	}
	for i := range 400 {
		start := 1 + rng.IntN(10000)
		add(item{Name: fmt.Sprintf("cam%d", i%4), Start: start, End: start + 1 + rng.IntN(60)})
	}
	add(item{Name: "cam1", Start: 100, End: 9000})
	add(item{Name: "cam2", Start: 5000, End: 4000}) // ends before it starts: never meets a range
	add(item{Name: "cam3"})                         // no interval
	check := func(stream string, from, to int64) {
		t.Helper()
		var want []string
		for _, it := range all {
			if (stream == "" || it.Name == stream) && it.Start != 0 && it.End != 0 && int64(it.Start) < to && int64(it.End) > from {
				want = append(want, fmt.Sprint(it.Name, it.Start, "-", it.End))
			}
		}
		var where query.Where
		where.EqIfSet("stream", stream)
		where.Add(query.Overlaps("start_ms", "end_ms", "span_ms", from, to))
		got, err := query.All(context.Background(), h.s, query.Query{Index: "clips", Where: where}, query.JSON[item])
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, it := range got {
			have = append(have, fmt.Sprint(it.Name, it.Start, "-", it.End))
		}
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(want, have) {
			t.Fatalf("stream %q [%d, %d): got %v, want %v", stream, from, to, have, want)
		}
	}
	run := func() {
		for range 200 {
			from := int64(rng.IntN(12000))
			for _, stream := range []string{"", "cam0", "cam1", "cam2", "cam3", "none"} {
				check(stream, from, from+1+int64(rng.IntN(300)))
			}
		}
		check("cam1", 8000, math.MaxInt64)
		check("", 8999, 9000)
	}
	run()
	add(item{Name: "cam0", Start: 50, End: 11000})
	run()
}

// TestOverlapsReadsTheStartTreeFromTheLongestSpan: the plan ranges over
// the composite tree led by the stream and start, and takes the longest
// span of that stream from the (stream, span) tree (of the whole index
// from the span's tree when no stream is fixed); a span column that is
// not end minus start is refused.
func TestOverlapsReadsTheStartTreeFromTheLongestSpan(t *testing.T) {
	h := newHarness(t, spanIndex)
	for i := range 100 {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/clips/%03d", i), mustJSON(t, item{Name: fmt.Sprintf("cam%d", i%4), Start: 10 * (i + 1), End: 10*(i+1) + 10}))}})
	}
	plan := func(where ...query.Cond) string {
		t.Helper()
		return h.plan(spanIndex, query.Query{Index: "clips", Where: where, Order: []query.Order{query.Asc("start_ms")}})
	}
	one := plan(query.Eq("stream", "cam1"), query.Overlaps("start_ms", "end_ms", "span_ms", 300, 600))
	if !strings.Contains(one, "idx_clips_c_stream_start_ms_end_ms (stream=? AND start_ms>? AND start_ms<?)") ||
		!strings.Contains(one, "idx_clips_c_stream_span_ms (stream=?)") {
		t.Fatalf("one stream: plan %q", one)
	}
	every := plan(query.Overlaps("start_ms", "end_ms", "span_ms", 300, 600))
	if !strings.Contains(every, "idx_clips_start_ms (start_ms>? AND start_ms<?)") || !strings.Contains(every, "idx_clips_span_ms") {
		t.Fatalf("every stream: plan %q", every)
	}
	for _, c := range []query.Cond{
		query.Overlaps("start_ms", "end_ms", "start_ms", 300, 600),
		query.Overlaps("end_ms", "start_ms", "span_ms", 300, 600),
		query.Overlaps("start_ms", "end_ms", "nope", 300, 600),
		{Column: "start_ms", Op: query.OpOverlaps, Values: []any{300, 600}, With: []string{"end_ms", "span_ms"}},
	} {
		_, err := query.All(context.Background(), h.s, query.Query{Index: "clips", Where: []query.Cond{c}}, query.JSON[item])
		if !errors.Is(err, query.ErrBadQuery) {
			t.Fatalf("%+v: %v, want ErrBadQuery", c, err)
		}
	}
}
