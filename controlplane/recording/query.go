package recording

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// Every index query of recording lives in this file.

// FileFilter selects files; empty fields do not filter. Start and End
// select the files whose media intersects [Start, End).
type FileFilter struct {
	MediaServerID, NodeID, ChannelID, App, StreamID string
	FileState, RecordDate, SourceHook, IndexSource  string
	Start, End                                      *time.Time
	// IncludeDeleted lists hard-deleted files too (their rows stay as
	// tombstones so a restore can answer that the bytes are gone).
	IncludeDeleted bool
	Page, PageSize int
}

// MaxPageSize bounds a page of any recording listing.
const MaxPageSize = 500

func pageSize(n int) int {
	switch {
	case n <= 0:
		return 20
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// Files lists one page of files, oldest media first, and the total.
//
// The time intersection is start_ms < end AND end_ms > start, which
// query.Overlaps bounds below by start minus the longest file of the
// stream or channel (of all files when neither is given): one range scan
// of the files that began in [start - longest, end), each of which can
// meet the range, instead of every file of the 25 hours before it. For one
// stream or channel the composite trees (stream_id or channel_id,
// start_ms, end_ms, file_state) hold every column the query tests, and
// (stream_id or channel_id, span_ms) gives the longest file in one step.
func (s *Service) Files(ctx context.Context, f FileFilter) ([]File, int64, error) {
	var where query.Where
	eq := where.EqIfSet
	eq("media_server_id", f.MediaServerID)
	eq("node_id", f.NodeID)
	eq("channel_id", f.ChannelID)
	eq("app", f.App)
	eq("stream_id", f.StreamID)
	eq("file_state", f.FileState)
	eq("record_date", f.RecordDate)
	eq("source_hook", f.SourceHook)
	eq("index_source", f.IndexSource)
	if f.FileState == "" && !f.IncludeDeleted {
		where.Add(query.Ne("file_state", FileDeleted))
	}
	if f.Start != nil && f.End != nil && !f.Start.Before(*f.End) {
		return nil, 0, fmt.Errorf("%w: startTime must be before endTime", ErrInvalidQuery)
	}
	switch {
	case f.Start != nil:
		to := int64(math.MaxInt64)
		if f.End != nil {
			to = f.End.UnixMilli()
		}
		where.Add(query.Overlaps("start_ms", "end_ms", "span_ms", f.Start.UnixMilli(), to))
	case f.End != nil:
		where.Add(query.Lt("start_ms", f.End.UnixMilli()))
	}
	return query.Page(ctx, s.Reader, query.Query{Index: FileIndex.Name, Where: where, Order: []query.Order{query.Asc("start_ms")}},
		max(f.Page, 1), pageSize(f.PageSize), query.JSON[File])
}

// SessionFilter selects sessions; empty fields do not filter.
type SessionFilter struct {
	MediaServerID, NodeID, ChannelID, App, StreamID, State, RecordSource string
	Page, PageSize                                                       int
}

// Sessions lists one page of sessions by key and the total.
func (s *Service) Sessions(ctx context.Context, f SessionFilter) ([]Session, int64, error) {
	var where query.Where
	for _, c := range [][2]string{{"media_server_id", f.MediaServerID}, {"node_id", f.NodeID}, {"channel_id", f.ChannelID}, {"app", f.App},
		{"stream_id", f.StreamID}, {"state", f.State}, {"record_source", f.RecordSource}} {
		where.EqIfSet(c[0], c[1])
	}
	return query.Page(ctx, s.Reader, query.Query{Index: SessionIndex.Name, Where: where, Order: []query.Order{query.Asc(query.Key)}},
		max(f.Page, 1), pageSize(f.PageSize), query.JSON[Session])
}

// FileStatistics summarises the file index, of one channel or of all.
type FileStatistics struct {
	ChannelID string `json:"channelId,omitempty"`
	// Files counts the files per state; Total all of them but the
	// hard-deleted tombstones.
	Files map[string]int64 `json:"files"`
	Total int64            `json:"total"`
	// EarliestStartTime is the start of the oldest listed file.
	EarliestStartTime *time.Time `json:"earliestStartTime,omitempty"`
	// AverageDurationMs and LongestDurationMs are over the listed files.
	AverageDurationMs int64 `json:"averageDurationMs"`
	LongestDurationMs int64 `json:"longestDurationMs"`
	// RecordDays counts the UTC dates with recordings.
	RecordDays int `json:"recordDays"`
}

// Statistics summarises the files of a channel (all when channelID is
// empty) from the index alone: counts per state, the oldest start, the
// durations and the days with recordings.
func (s *Service) Statistics(ctx context.Context, channelID string) (*FileStatistics, error) {
	out := &FileStatistics{ChannelID: channelID, Files: map[string]int64{}}
	var scope query.Where
	scope.EqIfSet("channel_id", channelID)
	listed := append(append(query.Where{}, scope...), query.Ne("file_state", FileDeleted))
	err := s.Reader.View(ctx, func(v query.View) error {
		by, err := v.CountBy(FileIndex.Name, "file_state", scope...)
		if err != nil {
			return err
		}
		for state, n := range by {
			out.Files[state] = n
			if state != FileDeleted {
				out.Total += n
			}
		}
		if ms, ok, err := v.Min(FileIndex.Name, "start_ms", listed...); err != nil {
			return err
		} else if ok {
			t := time.UnixMilli(ms).UTC()
			out.EarliestStartTime = &t
		}
		avg, longest, err := v.Span(FileIndex.Name, "start_ms", "end_ms", listed...)
		if err != nil {
			return err
		}
		out.AverageDurationMs, out.LongestDurationMs = int64(avg), longest
		days, err := v.Distinct(FileIndex.Name, []string{"record_date"}, listed...)
		out.RecordDays = len(days)
		return err
	})
	return out, err
}
