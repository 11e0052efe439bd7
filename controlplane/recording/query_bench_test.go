package recording

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// BenchmarkFilesIntersect lists one page of the files of one stream that
// intersect a random one-hour range, over an index of 200 streams with a
// 1-minute file each minute (200,000 rows, about 17 days each). It reports
// the p99 of the query with the standard ns/op.
func BenchmarkFilesIntersect(b *testing.B) {
	s := newService(b)
	ctx := context.Background()
	const streams, perStream = 200, 1000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for m := 0; m < perStream; m++ {
		var ops []store.Op
		for st := 0; st < streams; st++ {
			id, _ := uuid.NewV7()
			start := base.Add(time.Duration(m) * time.Minute)
			f := File{FileID: id.String(), MediaServerID: "media-1", NodeID: "media-1", Vhost: "__defaultVhost__", App: "live",
				StreamID: fmt.Sprintf("cam%03d", st), FileName: "x.mp4", RelPath: "x", FileSize: 15 << 20, StartTime: start,
				EndTime: start.Add(time.Minute), StartMs: start.UnixMilli(), EndMs: start.Add(time.Minute).UnixMilli(), DurationMs: 60000,
				FileState: FileCompleted, RecordDate: start.Format("2006-01-02"), SourceHook: SourceHookRecordMP4, IndexSource: IndexFromHook}
			v, _ := json.Marshal(f)
			ops = append(ops, store.Put(fileKey(f.FileID), v))
		}
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		from := base.Add(time.Duration(rand.IntN(perStream-60)) * time.Minute)
		to := from.Add(time.Hour)
		t0 := time.Now()
		rows, total, err := s.Files(ctx, FileFilter{StreamID: fmt.Sprintf("cam%03d", rand.IntN(streams)), Start: &from, End: &to, PageSize: 100})
		lat = append(lat, time.Since(t0))
		if err != nil || total != 60 || len(rows) != 60 {
			b.Fatalf("%d rows of %d: %v", len(rows), total, err)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
