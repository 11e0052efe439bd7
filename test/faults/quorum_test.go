package faults

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

// A node that lost its quorum goes on answering reads from its own state,
// and authenticating the credentials it had already checked, marking every
// answer X-Svc-Stale: true; linearizable reads and writes fail clearly with
// 503 unavailable, and a credential it never checked is refused. When the
// others come back everything is fresh again and writes work.
func TestQuorumLossKeepsLocalReads(t *testing.T) {
	c := newCluster(t, 3, nil)
	n3 := c.nodes[2]
	st, ch, body := c.createChannel(c.nodes[0], "before-loss")
	if st != 200 {
		t.Fatalf("create: %d %s", st, body)
	}
	testkit.Eventually(t, 10*time.Second, "the channel on n3", func() bool { st, _, _ := c.getChannel(n3, ch.ChannelID, nil); return st == 200 })
	st, _, body = do(c.nodes[0].url(), c.token, "POST", "/api/v2/security/api-tokens", map[string]any{"name": "never used on n3", "permissions": []string{"*"}}, nil)
	if st != 200 {
		t.Fatalf("second token: %d %s", st, body)
	}
	var unseen struct{ Token string }
	json.Unmarshal(body, &unseen)
	if _, h, _ := c.getChannel(n3, ch.ChannelID, nil); h.Get("X-Svc-Stale") != "" {
		t.Fatal("a node in contact with its leader marks its answers stale")
	}

	for round := 0; round < rounds(1, 3); round++ {
		c.nodes[0].kill()
		c.nodes[1].kill()
		lost := time.Now()
		testkit.Eventually(t, 15*time.Second, "n3 marking its answers stale", func() bool {
			st, h, _ := c.getChannel(n3, ch.ChannelID, nil)
			return st == 200 && h.Get("X-Svc-Stale") == "true"
		})
		// A local read of data the node holds, with a credential it knows.
		st, h, got := c.getChannel(n3, ch.ChannelID, nil)
		if st != 200 || got.Stream != "before-loss" || h.Get("X-Svc-Stale") != "true" {
			t.Fatalf("local read during quorum loss: %d %+v %v", st, got, h)
		}
		st, _, body := do(n3.url(), c.token, "GET", "/api/v2/channels", nil, nil)
		if st != 200 {
			t.Fatalf("list during quorum loss: %d %s", st, body)
		}
		// A linearizable read and a write fail clearly.
		st, h, body = do(n3.url(), c.token, "GET", "/api/v2/channels/"+ch.ChannelID, nil, map[string]string{"X-Svc-Consistency": "linearizable"})
		if e := decodeError(t, body); st != 503 || e.Code != "unavailable" || h.Get("X-Svc-Stale") != "true" {
			t.Fatalf("linearizable read during quorum loss: %d %s", st, body)
		}
		st, _, body = c.createChannel(n3, "during-loss")
		if e := decodeError(t, body); st != 503 || e.Retryable == nil || !*e.Retryable {
			t.Fatalf("write during quorum loss: %d %s", st, body)
		}
		// Past the window in which it still trusts its recent state, a
		// credential n3 never checked is refused.
		time.Sleep(time.Until(lost.Add(11 * time.Second)))
		st, _, body = do(n3.url(), unseen.Token, "GET", "/api/v2/channels/"+ch.ChannelID, nil, nil)
		if e := decodeError(t, body); st != 503 || e.Code != "unavailable" {
			t.Fatalf("an unchecked credential during quorum loss: %d %s", st, body)
		}
		if st, _, _ := c.getChannel(n3, ch.ChannelID, nil); st != 200 {
			t.Fatalf("the checked credential stopped working: %d", st)
		}

		c.nodes[0].start()
		c.nodes[1].start()
		c.waitServing(c.nodes[0])
		c.waitServing(c.nodes[1])
		testkit.Eventually(t, 30*time.Second, "writes through n3 working again", func() bool {
			st, _, _ := c.createChannel(n3, "after-loss-"+time.Now().Format("150405.000"))
			return st == 200
		})
		if _, h, _ := c.getChannel(n3, ch.ChannelID, nil); h.Get("X-Svc-Stale") != "" {
			t.Fatal("answers still marked stale after the quorum came back")
		}
	}
}
