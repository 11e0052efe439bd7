package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

type createdToken struct {
	TokenID  string `json:"tokenId"`
	Token    string `json:"token"`
	APIToken struct {
		State      string
		Revealable bool
	} `json:"apiToken"`
}

func createToken(ts *controlnode.Node, t *testing.T, creator string, body string) (createdToken, controlnode.Response) {
	t.Helper()
	r := ts.Do("POST", "/api/v2/security/api-tokens", creator, "application/json", []byte(body))
	var c createdToken
	if r.Status == 200 {
		r.JSON(t, &c)
	}
	return c, r
}

func TestAPITokenLifecycle(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "tok", "", "", func(c *config.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} }, logs)
	admin := ts.Token("*")
	var responses []string // every body except the ones that create or reveal a token

	// The permission ceiling: a token manager cannot hand out more than it holds.
	manager := ts.Token("security.tokens.manage", "channels.view")
	_, r := createToken(ts, t, manager, `{"name":"too much","permissions":["channels.view","streams.play"]}`)
	checkErrorBody(t, r, 403, "permission_denied")
	_, r = createToken(ts, t, manager, `{"name":"super","permissions":["*"]}`)
	checkErrorBody(t, r, 403, "permission_denied")
	_, r = createToken(ts, t, admin, `{"name":"bad","permissions":["no.such.permission"]}`)
	checkErrorBody(t, r, 400, "invalid_body")
	_, r = createToken(ts, t, admin, `{"name":"bad ip","permissions":["system.view"],"allowedIps":["10.0.0.300/8"]}`)
	checkErrorBody(t, r, 400, "invalid_body")
	responses = append(responses, string(r.Body))

	tok, r := createToken(ts, t, manager, `{"name":"sync","purpose":"channel sync","permissions":["channels.view"],"revealable":true}`)
	if r.Status != 200 || !strings.HasPrefix(tok.Token, "svc_pat_") || tok.APIToken.State != "active" || !tok.APIToken.Revealable {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	// It works, with exactly its permission.
	if r := ts.Get("/api/v2/security/permissions", tok.Token); r.Status != 200 {
		t.Fatalf("auth-only operation: %d", r.Status)
	}
	checkErrorBody(t, ts.Get("/api/v2/system/info", tok.Token), 403, "permission_denied")

	// A one-character typo fails the checksum before any lookup.
	// ('a' becomes 'b', anything else 'a'.)
	typo := tok.Token[:len(tok.Token)-1] + string("ab"[(strings.IndexByte("ab", tok.Token[len(tok.Token)-1])+1)&1])
	checkErrorBody(t, ts.Get("/api/v2/security/permissions", typo), 401, "api_token_required")

	// Reveal gives back the same value; a non-revealable token refuses.
	var rev struct{ Token string }
	ts.Do("POST", "/api/v2/security/api-tokens/"+tok.TokenID+"/reveal", admin, "", nil).JSON(t, &rev)
	if rev.Token != tok.Token {
		t.Fatal("reveal returned a different token")
	}
	plain, _ := createToken(ts, t, admin, `{"name":"plain","permissions":["system.view"]}`)
	r = ts.Do("POST", "/api/v2/security/api-tokens/"+plain.TokenID+"/reveal", admin, "", nil)
	checkErrorBody(t, r, 409, "token_not_revealable")
	responses = append(responses, string(r.Body))

	// Listing shows digests and prefixes, never the token or the sealed copy.
	r = ts.Get("/api/v2/security/api-tokens?includeRevoked=true", admin)
	responses = append(responses, string(r.Body))
	if r.Status != 200 || !strings.Contains(string(r.Body), tok.Token[:12]) || strings.Contains(string(r.Body), "sealed") {
		t.Fatalf("list: %s", r.Body)
	}

	// IP allow-list: from loopback directly, and through the trusted proxy.
	ipTok, _ := createToken(ts, t, admin, `{"name":"ip","permissions":["system.view"],"allowedIps":["192.0.2.0/24"]}`)
	checkErrorBody(t, ts.Get("/api/v2/system/version", ipTok.Token), 401, "api_token_required")
	viaProxy := func(addr string) int {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v2/system/version", nil)
		req.Header.Set("Authorization", "Bearer "+ipTok.Token)
		req.Header.Set("X-Forwarded-For", addr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := viaProxy("192.0.2.7"); got != 200 {
		t.Fatalf("allowed address through trusted proxy: %d", got)
	}
	if got := viaProxy("198.51.100.7"); got != 401 {
		t.Fatalf("denied address through trusted proxy: %d", got)
	}

	// Expiry and not-before.
	exp := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	short, r := createToken(ts, t, admin, fmt.Sprintf(`{"name":"short","permissions":["system.view"],"expiresAt":%q}`, exp))
	if r.Status != 200 || ts.Get("/api/v2/system/version", short.Token).Status != 200 {
		t.Fatalf("short-lived token: %d %s", r.Status, r.Body)
	}
	time.Sleep(1600 * time.Millisecond)
	checkErrorBody(t, ts.Get("/api/v2/system/version", short.Token), 401, "api_token_required")
	nbf := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	later, _ := createToken(ts, t, admin, fmt.Sprintf(`{"name":"later","permissions":["system.view"],"notBefore":%q}`, nbf))
	checkErrorBody(t, ts.Get("/api/v2/system/version", later.Token), 401, "api_token_required")

	// Rotation: the old value stops at once, the new one works.
	var rot createdToken
	ts.Do("POST", "/api/v2/security/api-tokens/"+tok.TokenID+"/rotate", admin, "", nil).JSON(t, &rot)
	if rot.Token == tok.Token || rot.TokenID != tok.TokenID {
		t.Fatalf("rotate: %+v", rot)
	}
	checkErrorBody(t, ts.Get("/api/v2/security/permissions", tok.Token), 401, "api_token_required")
	if ts.Get("/api/v2/security/permissions", rot.Token).Status != 200 {
		t.Fatal("rotated token does not work")
	}

	// Update narrows at once; revoke ends it.
	r = ts.Do("PUT", "/api/v2/security/api-tokens/"+plain.TokenID, admin, "application/json", []byte(`{"permissions":["nodes.view"]}`))
	responses = append(responses, string(r.Body))
	checkErrorBody(t, ts.Get("/api/v2/system/version", plain.Token), 403, "permission_denied")
	r = ts.Do("DELETE", "/api/v2/security/api-tokens/"+plain.TokenID, admin, "", nil)
	responses = append(responses, string(r.Body))
	checkErrorBody(t, ts.Get("/api/v2/cluster/status", plain.Token), 401, "api_token_required")
	checkErrorBody(t, ts.Do("POST", "/api/v2/security/api-tokens/"+plain.TokenID+"/rotate", admin, "", nil), 409, "conflict")
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/security/api-tokens/nope", admin, "", nil), 404, "not_found")

	// Capabilities list what the calling token holds.
	capTok, _ := createToken(ts, t, admin, `{"name":"cap","permissions":["channels.view","streams.view","streams.play"]}`)
	var caps struct {
		Permissions []string
		Categories  []struct {
			Category  string
			Available bool
		}
	}
	r = ts.Get("/api/v2/third-party/capabilities", capTok.Token)
	responses = append(responses, string(r.Body))
	r.JSON(t, &caps)
	avail := map[string]bool{}
	for _, c := range caps.Categories {
		avail[c.Category] = c.Available
	}
	if len(caps.Permissions) != 3 || !avail["live-playback"] || !avail["channel-sync"] || avail["channel-control"] {
		t.Fatalf("capabilities = %+v", caps)
	}

	// The audit log has the token events and the denials, without secrets.
	// Denials are written in the background, so the log is read until they
	// are there.
	wants := []string{"security.token.created/success", "security.token.revealed/success", "security.token.rotated/success",
		"security.token.updated/success", "security.token.revoked/success", "security.permission_denied/denied"}
	seen := map[string]int{}
	var denied struct{ Total int }
	complete := func() bool {
		var audit struct {
			Total int
			Rows  []struct{ EventType, Outcome, Target string }
		}
		r := ts.Get("/api/v2/security/audit?pageSize=200", admin)
		responses = append(responses, string(r.Body))
		r.JSON(t, &audit)
		seen = map[string]int{}
		for _, a := range audit.Rows {
			seen[a.EventType+"/"+a.Outcome]++
		}
		ts.Get("/api/v2/security/audit?outcome=denied", admin).JSON(t, &denied)
		for _, want := range wants {
			if seen[want] == 0 {
				return false
			}
		}
		return denied.Total >= 2
	}
	testkit.Eventually(t, 20*time.Second, "every token event and two denials in the audit log", complete)

	// No token value appears in any log line or in any other controlnode.Response.
	ts.S.Shutdown()
	all := logs.String() + strings.Join(responses, "\n")
	for _, secret := range []string{tok.Token, rot.Token, plain.Token, ipTok.Token, short.Token, later.Token, capTok.Token, admin, manager} {
		if strings.Contains(all, secret) || strings.Contains(all, secret[8:]) {
			t.Errorf("a token value leaked into logs or responses")
		}
	}
	if !strings.Contains(logs.String(), `"traceId"`) {
		t.Fatal("captured no request logs; the grep proves nothing")
	}
}

func TestRevocationSeenOnAnotherNodeWithinOneRequest(t *testing.T) {
	a := controlnode.StartNode(t, "va", "", "")
	b := controlnode.StartNode(t, "vb", a.URL, a.KeyFile())
	c := controlnode.StartNode(t, "vc", a.URL, a.KeyFile())
	admin := a.Token("*")
	for round := 0; round < 5; round++ {
		tok, r := createToken(b, t, admin, `{"name":"victim","permissions":["system.view"]}`)
		if r.Status != 200 {
			t.Fatalf("create via follower: %s", r.Body)
		}
		if c.Get("/api/v2/system/version", tok.Token).Status != 200 {
			t.Fatal("new token not usable on a third node")
		}
		if r := b.Do("DELETE", "/api/v2/security/api-tokens/"+tok.TokenID, admin, "", nil); r.Status != 200 {
			t.Fatalf("revoke: %s", r.Body)
		}
		// The very next request, on each other node, is refused.
		checkErrorBody(t, c.Get("/api/v2/system/version", tok.Token), 401, "api_token_required")
		checkErrorBody(t, a.Get("/api/v2/system/version", tok.Token), 401, "api_token_required")
	}
}

// A node cut off from the leader keeps deciding only on credentials it
// checked before the cut (their records cannot have changed on its side),
// marks its answers stale, and refuses any other credential and every write.
func TestPartitionedNodeDecidesOnlyOnCheckedCredentials(t *testing.T) {
	a := controlnode.StartNode(t, "pa", "", "")
	b := controlnode.StartNode(t, "pb", a.URL, a.KeyFile())
	c := controlnode.StartNode(t, "pc", a.URL, a.KeyFile())
	tok := a.Token("system.view")
	unseen := a.Token("system.view")
	if r := c.Get("/api/v2/system/version", tok); r.Status != 200 || r.Header.Get("X-Svc-Stale") != "" {
		t.Fatalf("token not accepted while the cluster is whole, or marked stale: %d %v", r.Status, r.Header)
	}
	// Cut c off from the majority by stopping the two others.
	a.S.Shutdown()
	b.S.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for c.Get("/health", "").Header.Get("X-Svc-Stale") != "true" {
		if time.Now().After(deadline) {
			t.Fatal("a node without a leader does not mark its answers stale")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Past the window in which a follower still trusts its recent state.
	time.Sleep(server.AuthContactWindow)
	checkErrorBody(t, c.Get("/api/v2/system/version", unseen), 503, "unavailable")
	r := c.Get("/api/v2/system/version", tok)
	if r.Status != 200 || r.Header.Get("X-Svc-Stale") != "true" {
		t.Fatalf("a credential checked before the cut: %d, X-Svc-Stale %q", r.Status, r.Header.Get("X-Svc-Stale"))
	}
	r = c.Do("GET", "/api/v2/system/version", "", "", nil)
	if r.Header.Get("X-Svc-Stale") != "true" {
		t.Fatal("an error answer of a cut-off node is not marked stale")
	}
	if r := c.Get("/health", ""); r.Status != 503 && r.Status != 200 {
		t.Fatalf("public health: %d", r.Status)
	}
}
