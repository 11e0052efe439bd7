package system

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/store"
)

// Retention categories. Watch history and the state-hash chain are removed
// together by one replicated compaction; stale readiness probes are records
// of nodes that are no longer members.
const (
	RetentionWatchHistory    = "watch-history"
	RetentionReadinessProbes = "readiness-probes"
)

// RetentionCategories lists the known categories.
var RetentionCategories = []string{RetentionWatchHistory, RetentionReadinessProbes}

func (s *Service) keepAfter() int64 {
	return max(s.d.Node.Revision()-s.d.HistoryRetention, 0)
}

// staleProbes lists readiness-probe keys of nodes that are not members.
func (s *Service) staleProbes(ctx context.Context) ([]string, error) {
	members, err := s.d.Node.Members(ctx)
	if err != nil {
		return nil, err
	}
	isMember := map[string]bool{}
	for _, m := range members {
		isMember[m.NodeID] = true
	}
	r, err := s.d.Node.Range(ctx, "/system/readiness/", store.RangeOptions{End: store.PrefixEnd("/system/readiness/"), KeysOnly: true})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range r.KVs {
		if !isMember[strings.TrimPrefix(kv.Key, "/system/readiness/")] {
			out = append(out, kv.Key)
		}
	}
	return out, nil
}

// RetentionPreview reports what a cleanup would remove, changing nothing.
func (s *Service) RetentionPreview(ctx context.Context, actor, reason string) (contract.DataRetentionCleanupPreview, error) {
	out := contract.DataRetentionCleanupPreview{GeneratedAt: time.Now().UTC(), Actor: actor, Reason: reason}
	keep := s.keepAfter()
	hist := contract.RetentionCategory{Category: RetentionWatchHistory, KeepAfterRevision: keep,
		Policy: fmt.Sprintf("keep the newest %d revisions of watch history and state hashes; older ones are compacted on every node", s.d.HistoryRetention)}
	var err error
	if hist.EligibleCount, hist.OldestRevision, err = s.d.Node.State().RetainedHistory(ctx, keep); err != nil {
		return out, err
	}
	stale, err := s.staleProbes(ctx)
	if err != nil {
		return out, err
	}
	out.Categories = []contract.RetentionCategory{hist, {Category: RetentionReadinessProbes, EligibleCount: int64(len(stale)),
		Policy: "readiness round-trip records of nodes that are no longer cluster members", KeepAfterRevision: 0}}
	return out, nil
}

// RetentionRun performs one cleanup round through the replicated store.
func (s *Service) RetentionRun(ctx context.Context, actor, reason string, categories []string) (contract.DataRetentionCleanupRunResult, error) {
	out := contract.DataRetentionCleanupRunResult{StartedAt: time.Now().UTC(), Actor: actor, Reason: reason, Categories: []contract.RetentionCategoryResult{}}
	want := map[string]bool{}
	for _, c := range categories {
		want[c] = true
	}
	all := len(categories) == 0
	if all || want[RetentionWatchHistory] {
		res := contract.RetentionCategoryResult{Category: RetentionWatchHistory}
		if keep := s.keepAfter(); keep > s.d.Node.State().CompactRevision() {
			cr, err := s.d.Node.Compact(ctx, keep)
			if err != nil {
				return out, err
			}
			res.DeletedCount = cr.HistoryRows
		}
		out.Categories = append(out.Categories, res)
	}
	if all || want[RetentionReadinessProbes] {
		stale, err := s.staleProbes(ctx)
		if err != nil {
			return out, err
		}
		res := contract.RetentionCategoryResult{Category: RetentionReadinessProbes}
		if len(stale) > 0 {
			var ops []store.Op
			for _, k := range stale {
				ops = append(ops, store.Delete(k))
			}
			resp, err := s.d.Node.Txn(ctx, store.TxnRequest{Then: ops})
			if err != nil {
				return out, err
			}
			for _, r := range resp.Responses {
				res.DeletedCount += r.Deleted
			}
		}
		out.Categories = append(out.Categories, res)
	}
	out.Revision = s.d.Node.Revision()
	out.FinishedAt = time.Now().UTC()
	return out, nil
}

// RegisterBuiltinTasks adds the tasks every control node offers.
func (s *Service) RegisterBuiltinTasks() {
	s.d.Tasks.Register(Task{
		Name: "data-retention-cleanup", Description: "compact watch history beyond the retention window and remove stale readiness records",
		LeaderOnly: true, Interval: 10 * time.Minute, Preview: true,
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			details := map[string]string{}
			if preview {
				p, err := s.RetentionPreview(ctx, "system", "preview")
				if err != nil {
					return "", nil, err
				}
				for _, c := range p.Categories {
					details[c.Category] = fmt.Sprint(c.EligibleCount)
				}
				return "eligible records counted; nothing removed", details, nil
			}
			r, err := s.RetentionRun(ctx, "system", "scheduled retention", nil)
			if err != nil {
				return "", nil, err
			}
			for _, c := range r.Categories {
				details[c.Category] = fmt.Sprint(c.DeletedCount)
			}
			return "retention applied", details, nil
		},
	})
	s.d.Tasks.Register(Task{
		Name: "store-snapshot", Description: "take a raft snapshot of this node's state now (truncates the local log)",
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			f := s.d.Node.Raft().Snapshot()
			if err := f.Error(); err != nil {
				return "", nil, err
			}
			meta, _, err := f.Open()
			if err != nil {
				return "", nil, err
			}
			return "snapshot taken", map[string]string{"index": fmt.Sprint(meta.Index), "sizeBytes": fmt.Sprint(meta.Size)}, nil
		},
	})
	s.d.Tasks.Register(Task{
		Name: "parity-audit", Description: "compare the state hash of every member at a common revision",
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			r, err := s.ParityAudit(ctx, contract.GetParityAuditParams{IncludePassed: ptr(false)})
			if err != nil {
				return "", nil, err
			}
			details := map[string]string{"comparedRevision": fmt.Sprint(r.ComparedRevision), "problems": fmt.Sprint(len(r.Checks))}
			if !r.Passed {
				return "", details, fmt.Errorf("parity audit failed with %d problem(s)", len(r.Checks))
			}
			return "all members agree", details, nil
		},
	})
}
