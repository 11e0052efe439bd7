// Package retention removes what the replicated store keeps only for a
// while: watch history and the state-hash chain beyond the retention
// window (one replicated compaction), and the readiness round-trip records
// of nodes that are no longer members. A preview counts what a run would
// remove and changes nothing.
package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Categories of what a cleanup removes.
const (
	WatchHistory    = "watch-history"
	ReadinessProbes = "readiness-probes"
)

// Categories lists the known categories.
var Categories = []string{WatchHistory, ReadinessProbes}

// Category is what a cleanup of one category would remove.
type Category struct {
	Name   string
	Policy string
	// KeepAfterRevision: history at or below it is eligible (0 where the
	// category is not about revisions).
	KeepAfterRevision int64
	EligibleCount     int64
	OldestRevision    int64
}

// Preview is what a cleanup would remove now.
type Preview struct {
	GeneratedAt   time.Time
	Actor, Reason string
	Categories    []Category
}

// Removed is what a cleanup removed in one category.
type Removed struct {
	Category string
	Deleted  int64
}

// Result is one cleanup round.
type Result struct {
	StartedAt, FinishedAt time.Time
	Actor, Reason         string
	Categories            []Removed
	// Revision is the store's revision after the round.
	Revision int64
}

// Cleaner previews and runs cleanups through the replicated store.
type Cleaner struct {
	node *raftnode.Node
	// history is how many of the newest revisions keep their watch
	// history and state hashes.
	history int64
}

// New returns a cleaner keeping the newest history revisions.
func New(node *raftnode.Node, history int64) *Cleaner { return &Cleaner{node: node, history: history} }

func (c *Cleaner) keepAfter() int64 {
	return max(c.node.Revision()-c.history, 0)
}

// staleProbes lists readiness-probe keys of nodes that are not members.
func (c *Cleaner) staleProbes(ctx context.Context) ([]string, error) {
	members, err := c.node.Members(ctx)
	if err != nil {
		return nil, err
	}
	isMember := map[string]bool{}
	for _, m := range members {
		isMember[m.NodeID] = true
	}
	r, err := c.node.Range(ctx, cluster.ReadinessPrefix, store.RangeOptions{End: store.PrefixEnd(cluster.ReadinessPrefix), KeysOnly: true})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range r.KVs {
		if !isMember[strings.TrimPrefix(kv.Key, cluster.ReadinessPrefix)] {
			out = append(out, kv.Key)
		}
	}
	return out, nil
}

// Preview reports what a cleanup would remove, changing nothing.
func (c *Cleaner) Preview(ctx context.Context, actor, reason string) (Preview, error) {
	out := Preview{GeneratedAt: time.Now().UTC(), Actor: actor, Reason: reason}
	keep := c.keepAfter()
	hist := Category{Name: WatchHistory, KeepAfterRevision: keep,
		Policy: fmt.Sprintf("keep the newest %d revisions of watch history and state hashes; older ones are compacted on every node", c.history)}
	var err error
	if hist.EligibleCount, hist.OldestRevision, err = c.node.State().RetainedHistory(ctx, keep); err != nil {
		return out, err
	}
	stale, err := c.staleProbes(ctx)
	if err != nil {
		return out, err
	}
	out.Categories = []Category{hist, {Name: ReadinessProbes, EligibleCount: int64(len(stale)),
		Policy: "readiness round-trip records of nodes that are no longer cluster members"}}
	return out, nil
}

// Run performs one cleanup round of the given categories (all when none)
// through the replicated store.
func (c *Cleaner) Run(ctx context.Context, actor, reason string, categories []string) (Result, error) {
	out := Result{StartedAt: time.Now().UTC(), Actor: actor, Reason: reason, Categories: []Removed{}}
	want := map[string]bool{}
	for _, name := range categories {
		want[name] = true
	}
	all := len(categories) == 0
	if all || want[WatchHistory] {
		res := Removed{Category: WatchHistory}
		if keep := c.keepAfter(); keep > c.node.State().CompactRevision() {
			cr, err := c.node.Compact(ctx, keep)
			if err != nil {
				return out, err
			}
			res.Deleted = cr.HistoryRows
		}
		out.Categories = append(out.Categories, res)
	}
	if all || want[ReadinessProbes] {
		stale, err := c.staleProbes(ctx)
		if err != nil {
			return out, err
		}
		res := Removed{Category: ReadinessProbes}
		if len(stale) > 0 {
			var ops []store.Op
			for _, k := range stale {
				ops = append(ops, store.Delete(k))
			}
			resp, err := c.node.Txn(ctx, store.TxnRequest{Then: ops})
			if err != nil {
				return out, err
			}
			for _, r := range resp.Responses {
				res.Deleted += r.Deleted
			}
		}
		out.Categories = append(out.Categories, res)
	}
	out.Revision = c.node.Revision()
	out.FinishedAt = time.Now().UTC()
	return out, nil
}
