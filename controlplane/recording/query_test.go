package recording

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// TestFilesIntersectWithLongAndShortFiles: one-minute files of two streams
// on two channels, then one file of 30 hours on the first stream and a
// longer hard-deleted tombstone on the second. Every listing (one stream, one channel, every file;
// a range with both ends or a start alone) answers exactly the files whose
// media meets the range, in start order, whatever the longest file of the
// stream or of the index: the query's bound follows the files indexed.
// (Before the bound did, a file over 25 hours long was missed.)
func TestFilesIntersectWithLongAndShortFiles(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var all []File
	var ops []store.Op
	file := func(stream string, start time.Time, d time.Duration, state string) {
		id, _ := uuid.NewV7()
		f := File{FileID: id.String(), MediaServerID: "media-1", NodeID: "media-1", ChannelID: "ch-" + stream, Vhost: "__defaultVhost__",
			App: "live", StreamID: stream, FileName: "x.mp4", RelPath: "x", StartTime: start, EndTime: start.Add(d), StartMs: start.UnixMilli(),
			EndMs: start.Add(d).UnixMilli(), DurationMs: d.Milliseconds(), FileState: state, RecordDate: start.Format("2006-01-02"),
			SourceHook: SourceHookRecordMP4, IndexSource: IndexFromHook}
		op, err := store.PutRecord(fileKey(f.FileID), f)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
		all = append(all, f)
	}
	write := func() {
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
			t.Fatal(err)
		}
		ops = nil
	}
	for m := range 180 {
		file("camA", base.Add(time.Duration(m)*time.Minute), time.Minute, FileCompleted)
		file("camB", base.Add(time.Duration(m)*time.Minute+30*time.Second), time.Minute, FileCompleted)
	}
	write()
	list := func(f FileFilter) {
		t.Helper()
		var want []string
		for _, file := range all {
			if (f.StreamID == "" || file.StreamID == f.StreamID) && (f.ChannelID == "" || file.ChannelID == f.ChannelID) &&
				file.FileState != FileDeleted && file.EndTime.After(*f.Start) && (f.End == nil || file.StartTime.Before(*f.End)) {
				want = append(want, file.FileID)
			}
		}
		f.PageSize = MaxPageSize
		rows, total, err := s.Files(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range rows {
			got = append(got, r.FileID)
			if i > 0 && r.StartMs < rows[i-1].StartMs {
				t.Fatalf("%+v: not in start order at %d", f, i)
			}
		}
		slices.Sort(want)
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, want) || total != int64(len(want)) {
			t.Fatalf("stream %q channel %q [%s, %v): got %d files (total %d), want %d", f.StreamID, f.ChannelID, f.Start.Format(time.TimeOnly), f.End,
				len(got), total, len(want))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	run := func() {
		for range 12 {
			from := base.Add(time.Duration(rng.IntN(200)-10) * time.Minute)
			to := from.Add(time.Duration(1+rng.IntN(90)) * time.Minute)
			for _, f := range []FileFilter{{StreamID: "camA"}, {StreamID: "camB"}, {ChannelID: "ch-camA"}, {ChannelID: "ch-camB"}, {}} {
				f.Start, f.End = &from, &to
				list(f)
				f.End = nil
				list(f)
			}
		}
	}
	run()
	// Longer than any cap a query could have assumed (a segment closes at
	// 24 h at most, a cut/merge output or an imported file need not).
	file("camA", base.Add(-29*time.Hour), 30*time.Hour, FileCompleted)
	file("camB", base.Add(-40*time.Hour), 48*time.Hour, FileDeleted) // a tombstone: never listed
	write()
	run()
}
