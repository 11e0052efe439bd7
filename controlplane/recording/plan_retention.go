package recording

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// MaxRetentionDays bounds a plan's retentionDays (ten years).
const MaxRetentionDays = 3650

// retentionActor names the plans' retention sweep in node commands and
// the audit log.
var retentionActor = audit.Actor{Type: "system", ID: "plan-retention"}

// channelRetention is how many days each channel's recordings are kept
// by the plans: the longest retentionDays of the plans that name it and
// set one (enabled or not: pausing a plan's recording does not shorten
// how long what it recorded is kept). Channels without one are absent:
// their files are left to the engine's own retention.
func (s *Service) channelRetention(ctx context.Context) (map[string]int, error) {
	plans, err := s.Plans(ctx, "")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range plans {
		if p.RetentionDays <= 0 {
			continue
		}
		for _, ch := range p.ChannelIDs {
			out[ch] = max(out[ch], p.RetentionDays)
		}
	}
	return out, nil
}

// RetentionDue lists (at most limit) files the plans' retention deletes
// at now: Completed or SoftDeleted files of a channel whose plans keep N
// days, that ended more than N days before now. Files being written are
// not indexed yet, so they are never due.
func (s *Service) RetentionDue(ctx context.Context, now time.Time, limit int) ([]File, error) {
	keep, err := s.channelRetention(ctx)
	if err != nil {
		return nil, err
	}
	var out []File
	for ch, days := range keep {
		if len(out) >= limit {
			break
		}
		cutoff := now.Add(-time.Duration(days) * 24 * time.Hour).UnixMilli()
		var where query.Where
		where.Add(query.Eq("channel_id", ch), query.In("file_state", FileCompleted, FileSoftDeleted), query.Lt("end_ms", cutoff))
		files, err := query.All(ctx, s.Reader, query.Query{Index: FileIndex.Name, Where: where, Limit: limit - len(out),
			Order: []query.Order{{Column: "start_ms"}}, Using: "channel_id"}, query.JSON[File])
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// SweepPlanRetention hard-deletes the files the plans' retention makes
// due at now (as POST /api/v2/recording/files/delete does: the bytes on
// their media servers, then a Deleted tombstone), at most MaxBatch at a
// time until none is due. It answers how many files it deleted; a media
// server that cannot be asked keeps its files until a later pass.
func (s *Service) SweepPlanRetention(ctx context.Context, now time.Time) (int, error) {
	deleted := 0
	tried := map[string]bool{}
	for {
		due, err := s.RetentionDue(ctx, now, MaxBatch)
		if err != nil {
			return deleted, err
		}
		var ids []string
		for _, f := range due {
			if !tried[f.FileID] {
				tried[f.FileID] = true
				ids = append(ids, f.FileID)
			}
		}
		if len(ids) == 0 {
			return deleted, nil
		}
		res, err := s.HardDelete(ctx, retentionActor, ids)
		if err != nil {
			return deleted, err
		}
		for _, r := range res {
			if r.Success {
				deleted++
			}
		}
	}
}

// PlanRetentionPass runs SweepPlanRetention at the service's clock and logs
// what it did (a pass of the leader's loop).
func (s *Service) PlanRetentionPass(ctx context.Context, log *zap.Logger) {
	n, err := s.SweepPlanRetention(ctx, s.now())
	if err != nil && ctx.Err() == nil {
		log.Warn("recording plan retention", zap.Error(err))
	}
	if n > 0 {
		log.Info("recording plan retention deleted expired files", zap.Int("files", n))
	}
}
