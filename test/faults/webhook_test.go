package faults

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

// A webhook POST in flight when the dispatching leader is killed is sent
// again by the next leader (the outcome of the first is unknown), and the
// delivery counts both: the contract's attempts are the POSTs made.
func TestWebhookSentAgainAfterFailoverCountsBothAttempts(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	first := make(chan struct{})
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct{ EventID string }
		json.Unmarshal(body, &env)
		mu.Lock()
		posts = append(posts, env.EventID)
		n := len(posts)
		mu.Unlock()
		if n == 1 {
			close(first)
			select { // the first attempt never gets its answer
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()
	defer close(release)

	c := newCluster(t, 3, nil, "--webhook-allow-private-targets")
	st, _, body := do(c.nodes[0].url(), c.token, "POST", "/api/v2/system/webhooks/subscriptions", map[string]any{
		"name": "failover", "endpoint": rcv.URL + "/hook", "secret": "a webhook secret of enough length", "enabled": true,
		"events": []string{"media.*"}, "allowHttp": true, "timeoutSeconds": 30, "maxAttempts": 3}, nil)
	if st != 200 {
		t.Fatalf("plan: %d %s", st, body)
	}
	var plan struct{ ID string }
	json.Unmarshal(body, &plan)
	leader := c.leader()
	st, _, body = do(c.nodes[0].url(), c.token, "POST", "/api/v2/system/webhooks/subscriptions/"+plan.ID+"/test", map[string]string{"message": "failover"}, nil)
	if st != 200 {
		t.Fatalf("test event: %d %s", st, body)
	}
	var ev struct{ EventId string }
	json.Unmarshal(body, &ev)
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("the first POST did not arrive")
	}
	leader.kill()
	var survivor *node
	for _, n := range c.nodes {
		if n != leader {
			survivor = n
		}
	}
	var d struct {
		Rows []struct {
			EventID  string `json:"eventId"`
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"rows"`
	}
	testkit.Eventually(t, 60*time.Second, "the delivery completing on the next leader", func() bool {
		st, _, body := do(survivor.url(), c.token, "GET", "/api/v2/system/webhooks/subscriptions/"+plan.ID+"/deliveries", nil, nil)
		json.Unmarshal(body, &d)
		return st == 200 && len(d.Rows) == 1 && d.Rows[0].State == "Completed"
	})
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 2 || posts[0] != ev.EventId || posts[1] != ev.EventId {
		t.Fatalf("the receiver got %v, want the event %s twice", posts, ev.EventId)
	}
	if d.Rows[0].Attempts != 2 {
		t.Fatalf("the delivery shows %d attempts after two POSTs", d.Rows[0].Attempts)
	}
}
