package server

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/tasks"
)

// registerAuditRetention adds the leader task that keeps the audit log
// within its retention (age and count), 500 records per Txn.
func registerAuditRetention(reg *tasks.Registry, st store.Store, r audit.Retention) {
	reg.Register(tasks.Task{
		Name: "audit-retention", Description: "remove security audit records older than --audit-retention or beyond --audit-max-entries",
		LeaderOnly: true, Interval: time.Minute, Preview: true,
		Run: func(ctx context.Context, preview bool) (string, map[string]string, error) {
			if preview {
				n, err := audit.Excess(ctx, st, r, time.Now())
				return "would remove", map[string]string{"auditRecords": fmt.Sprint(n)}, err
			}
			var total int64
			for {
				n, err := audit.Prune(ctx, st, r, time.Now(), 500)
				total += n
				if err != nil {
					return "", nil, err
				}
				if n < 500 {
					return "retention applied", map[string]string{"auditRecords": fmt.Sprint(total)}, nil
				}
			}
		},
	})
}
