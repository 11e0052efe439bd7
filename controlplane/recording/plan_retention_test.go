package recording

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRetentionDue: a channel keeps its files the longest retentionDays
// of the plans naming it (a disabled plan's too); files that ended longer
// ago than that are due, Completed or SoftDeleted alike, while younger
// files, Deleted tombstones and channels without a plan retention are
// left to the engine. Out-of-range retentionDays are refused.
func TestRetentionDue(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	off := false
	slot := []Slot{{Day: "monday", Start: "08:00", End: "18:00"}}
	for _, in := range []PlanInput{
		{Name: "short", TimeZone: "UTC", Weekly: slot, ChannelIDs: []string{"ch-a"}, RetentionDays: 2},
		{Name: "long", TimeZone: "UTC", Weekly: slot, ChannelIDs: []string{"ch-a", "ch-b"}, RetentionDays: 5, Enabled: &off},
		{Name: "engine's", TimeZone: "UTC", Weekly: slot, ChannelIDs: []string{"ch-c"}},
	} {
		if _, err := s.CreatePlan(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []int{-1, MaxRetentionDays + 1} {
		if _, err := s.CreatePlan(ctx, PlanInput{Name: "bad", TimeZone: "UTC", Weekly: slot, RetentionDays: bad}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("retentionDays %d: %v", bad, err)
		}
	}
	// file indexes a 10 s file of channel ch that ended daysAgo before now,
	// in state.
	file := func(ch string, daysAgo float64, state string) string {
		h := report(now.Add(-time.Duration(daysAgo*24*float64(time.Hour))-10*time.Second), 10*time.Second)
		if _, _, err := s.FileCompleted(ctx, "media-1", "media-1", h); err != nil {
			t.Fatal(err)
		}
		if r := s.changeFile(ctx, h.FileID, func(f *File) (*ItemResult, error) {
			f.ChannelID, f.FileState = ch, state
			return nil, nil
		}); !r.Success {
			t.Fatal(r.Message)
		}
		return h.FileID
	}
	due := []string{file("ch-a", 6, FileCompleted), file("ch-a", 5.5, FileSoftDeleted), file("ch-b", 6, FileCompleted)}
	kept := []string{file("ch-a", 3, FileCompleted), file("ch-a", 4.9, FileCompleted), file("ch-b", 4, FileCompleted),
		file("ch-a", 9, FileDeleted), file("ch-c", 100, FileCompleted), file("", 100, FileCompleted)}
	got, err := s.RetentionDue(ctx, now, MaxBatch)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range got {
		ids = append(ids, f.FileID)
	}
	slices.Sort(ids)
	slices.Sort(due)
	if !slices.Equal(ids, due) {
		t.Fatalf("due %v, want %v (kept %v)", ids, due, kept)
	}
	if few, _ := s.RetentionDue(ctx, now, 1); len(few) != 1 {
		t.Fatalf("a limit of 1 gave %d files", len(few))
	}
}
