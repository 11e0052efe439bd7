package system

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/tasks"
)

// RegisterBuiltinTasks adds the tasks every control node offers.
func (s *Service) RegisterBuiltinTasks() {
	s.d.Tasks.Register(tasks.Task{
		Name: "data-retention-cleanup", Description: "compact watch history beyond the retention window and remove stale readiness records",
		LeaderOnly: true, Interval: 10 * time.Minute, Preview: true,
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			details := map[string]string{}
			if preview {
				p, err := s.d.Retention.Preview(ctx, "system", "preview")
				if err != nil {
					return "", nil, err
				}
				for _, c := range p.Categories {
					details[c.Name] = fmt.Sprint(c.EligibleCount)
				}
				return "eligible records counted; nothing removed", details, nil
			}
			r, err := s.d.Retention.Run(ctx, "system", "scheduled retention", nil)
			if err != nil {
				return "", nil, err
			}
			for _, c := range r.Categories {
				details[c.Category] = fmt.Sprint(c.Deleted)
			}
			return "retention applied", details, nil
		},
	})
	s.d.Tasks.Register(tasks.Task{
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
	s.d.Tasks.Register(tasks.Task{
		Name: "parity-audit", Description: "compare the state hash of every member at a common revision",
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			r, err := s.d.Cluster.Parity(ctx, cluster.ParityOptions{})
			if err != nil {
				return "", nil, err
			}
			problems := 0
			for _, c := range r.Checks {
				if !c.Passed {
					problems++
				}
			}
			details := map[string]string{"comparedRevision": fmt.Sprint(r.ComparedRevision), "problems": fmt.Sprint(problems)}
			if !r.Passed {
				return "", details, fmt.Errorf("parity audit failed with %d problem(s)", problems)
			}
			return "all members agree", details, nil
		},
	})
}
