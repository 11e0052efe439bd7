package adversarial

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
)

var moreDenials = regexp.MustCompile(`^(\d+) more permission denials`)

// Item 10: a credential denied thousands of times writes a bounded number
// of audit records (its first denial per window and one summary), and the
// audit log keeps to its retention. Before, one token wrote 17,900 rows
// (460 MB) in 10 s.
func TestAttack10AuditGrowth(t *testing.T) {
	const window = 2 * time.Second
	n := startNode(t, "a10", "", "", func(c *config.Config) { c.AuditDenialWindow = window; c.AuditMaxEntries = 1000 })
	super := n.token("*")
	flooder := n.token("display-wall.view")
	flooderID := n.tokenIDs[flooder]

	const denials = 3000
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if a := n.call("GET", "/api/v2/security/users", flooder, nil); a.status != 403 {
					t.Errorf("flood request: %s", a)
				}
			}
		}()
	}
	for i := range denials {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	// Wait for the last window's summary, then judge what was written.
	var rows []auditRow
	counted := 0
	deadline := time.Now().Add(3 * window)
	for counted != denials && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		rows, counted = rows[:0], 0
		for _, r := range n.audit(super, "security.permission_denied") {
			if r.ActorID != flooderID {
				continue
			}
			rows = append(rows, r)
			counted++
			if m := moreDenials.FindStringSubmatch(r.Message); m != nil {
				more, _ := strconv.Atoi(m[1])
				counted += more - 1
			}
		}
	}
	windows := int(took/window) + 2
	if len(rows) > 2*windows {
		t.Fatalf("%d denials in %s wrote %d audit records; at most %d (two per %s window) are allowed", denials, took, len(rows), 2*windows, window)
	}
	if counted != denials {
		t.Fatalf("the audit records account for %d of %d denials", counted, denials)
	}
	t.Logf("%d denials in %s: %d audit records", denials, took, len(rows))

	// Retention by count: more than 1,000 records, then the leader's task.
	for i := range 1050 {
		if a := n.call("POST", "/api/v2/security/roles", super, map[string]any{"name": fmt.Sprintf("role-%04d", i), "permissions": []string{"channels.view"}}); a.status != 200 {
			t.Fatalf("role %d: %s", i, a)
		}
	}
	var preview struct {
		Details map[string]string
	}
	n.call("POST", "/api/v2/system/tasks/audit-retention/run", super, map[string]any{"reason": "adversarial test", "preview": true}).decode(t, &preview)
	if preview.Details["auditRecords"] == "0" || preview.Details["auditRecords"] == "" {
		t.Fatalf("preview: %+v", preview)
	}
	if a := n.call("POST", "/api/v2/system/tasks/audit-retention/run", super, map[string]any{"reason": "adversarial test"}); a.status != 200 {
		t.Fatalf("retention run: %s", a)
	}
	var page struct{ Total int }
	n.call("GET", "/api/v2/security/audit?pageSize=1", super, nil).decode(t, &page)
	if page.Total > 1000 || page.Total < 990 {
		t.Fatalf("%d audit records after retention; the limit is 1000", page.Total)
	}
}
