package recording

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/shared/engineapi"
)

func newService(t testing.TB) *Service {
	t.Helper()
	node, keys := storetest.WithKeys(t, append(channels.Indexes, append(Indexes, events.OutboxIndex)...)...)
	return &Service{Store: node, Reader: node.State(), Channels: &channels.Service{Store: node, Reader: node.State(), Keys: keys}, NodeID: "cp1"}
}

// report is an on_record_mp4 of a file of stream live/cam starting at
// start and lasting d.
func report(start time.Time, d time.Duration) engineapi.RecordMP4Hook {
	id, _ := uuid.NewV7()
	name := start.UTC().Format("15-04-05") + "-" + id.String()[28:] + ".mp4"
	return engineapi.RecordMP4Hook{StreamRef: engineapi.StreamRef{Vhost: "__defaultVhost__", App: "live", Stream: "cam"}, FileID: id.String(),
		FileName: name, FilePath: "__defaultVhost__/live/cam/" + start.UTC().Format("2006-01-02") + "/" + name, FileSize: 1000, StartTime: start,
		TimeLen: d.Seconds(), Frames: 50, Codecs: []string{"H264"}, Reason: "duration"}
}

func countEvents(t *testing.T, s *Service) int {
	t.Helper()
	resp, err := s.Store.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix), CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Count)
}

// TestFileCompletedOnce: a report repeated (the engine was not sure it was
// taken) indexes the file and writes its event once.
func TestFileCompletedOnce(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	h := report(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 10*time.Second)
	for i := 0; i < 3; i++ {
		f, created, err := s.FileCompleted(ctx, "media-1", "media-1", h)
		if err != nil || created != (i == 0) || f.FileID != h.FileID {
			t.Fatalf("report %d: created %v, %v", i, created, err)
		}
	}
	if n := countEvents(t, s); n != 1 {
		t.Fatalf("%d events for one file", n)
	}
	f, err := s.File(ctx, h.FileID)
	if err != nil || f.DurationMs != 10000 || f.RecordDate != "2026-03-01" || !f.EndTime.Equal(h.StartTime.Add(10*time.Second)) {
		t.Fatalf("indexed %+v %v", f, err)
	}
}

// TestFileCompletedRefusesBadReports: ids that are not UUIDs, names with
// a path, paths that climb or are absolute, negative sizes.
func TestFileCompletedRefusesBadReports(t *testing.T) {
	s := newService(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for name, edit := range map[string]func(*engineapi.RecordMP4Hook){
		"id":             func(h *engineapi.RecordMP4Hook) { h.FileID = "../x" },
		"name with path": func(h *engineapi.RecordMP4Hook) { h.FileName = "a/b.mp4" },
		"absolute path":  func(h *engineapi.RecordMP4Hook) { h.FilePath = "/etc/" + h.FileName },
		"climbing path":  func(h *engineapi.RecordMP4Hook) { h.FilePath = "../../" + h.FileName },
		"other name":     func(h *engineapi.RecordMP4Hook) { h.FilePath = "a/other.mp4" },
		"negative size":  func(h *engineapi.RecordMP4Hook) { h.FileSize = -1 },
		"no start":       func(h *engineapi.RecordMP4Hook) { h.StartTime = time.Time{} },
	} {
		h := report(start, time.Second)
		edit(&h)
		if _, _, err := s.FileCompleted(context.Background(), "media-1", "media-1", h); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := countEvents(t, s); n != 0 {
		t.Fatalf("%d events for refused reports", n)
	}
}

// TestFilesIntersectTimeRange: 1 h of 10 min files with a 20 min gap; a
// range selects exactly the files it overlaps, touching ends excluded.
func TestFilesIntersectTimeRange(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for _, m := range []int{0, 10, 20, 50} { // 10:00, 10:10, 10:20, gap, 10:50
		h := report(base.Add(time.Duration(m)*time.Minute), 10*time.Minute)
		if _, _, err := s.FileCompleted(ctx, "media-1", "media-1", h); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.FileID)
	}
	at := func(m int) *time.Time { v := base.Add(time.Duration(m) * time.Minute); return &v }
	cases := []struct {
		from, to int
		want     []int
	}{
		{-60, 0, nil},         // ends where the first begins
		{-60, 1, []int{0}},    // overlaps the first minute
		{5, 15, []int{0, 1}},  // across a boundary
		{10, 20, []int{1}},    // exactly the second file
		{31, 49, nil},         // inside the gap
		{25, 55, []int{2, 3}}, // over the gap
		{-600, 600, []int{0, 1, 2, 3}},
		{60, 120, nil}, // after everything
	}
	for _, c := range cases {
		rows, total, err := s.Files(ctx, FileFilter{Start: at(c.from), End: at(c.to), StreamID: "cam"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.FileID)
		}
		var want []string
		for _, i := range c.want {
			want = append(want, ids[i])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || total != int64(len(want)) {
			t.Errorf("[%d, %d) min: got %v (total %d), want %v", c.from, c.to, got, total, want)
		}
	}
	if _, _, err := s.Files(ctx, FileFilter{Start: at(10), End: at(10)}); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("empty range: %v", err)
	}
}

// TestStatistics: counts per state, the oldest start, durations and days
// come from the index; a hard-deleted tombstone is counted only as such.
func TestStatistics(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	day1 := time.Date(2026, 3, 1, 23, 59, 50, 0, time.UTC)
	var ids []string
	for _, c := range []struct {
		at time.Time
		d  time.Duration
	}{{day1, 10 * time.Second}, {day1.Add(10 * time.Second), 20 * time.Second}, {day1.Add(time.Hour), 30 * time.Second}} {
		f, _, err := s.FileCompleted(ctx, "media-1", "media-1", report(c.at, c.d))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.FileID)
	}
	if _, err := s.SoftDelete(ctx, Actor{}, ids[1:2]); err != nil {
		t.Fatal(err)
	}
	// A tombstone: what a hard delete leaves.
	s.changeFile(ctx, ids[2], func(f *File) (*ItemResult, error) { f.FileState = FileDeleted; return nil, nil })
	st, err := s.Statistics(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 2 || st.Files[FileCompleted] != 1 || st.Files[FileSoftDeleted] != 1 || st.Files[FileDeleted] != 1 ||
		!st.EarliestStartTime.Equal(day1) || st.AverageDurationMs != 15000 || st.LongestDurationMs != 20000 || st.RecordDays != 2 {
		t.Fatalf("statistics %+v", st)
	}
	if st, err := s.Statistics(ctx, "no-such-channel"); err != nil || st.Total != 0 || st.EarliestStartTime != nil {
		t.Fatalf("an empty channel: %+v %v", st, err)
	}
}
