package adversarial

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
)

// fromAddress is a client whose connections come from a loopback address
// of its choice (127.0.0.0/8 is all this host's), as another machine's
// would.
func fromAddress(ip string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}}
}

// loginFrom attempts a console login from a given client address.
func loginFrom(t *testing.T, c *http.Client, base, user, password string, extra map[string]string) answer {
	t.Helper()
	body := map[string]string{"username": user, "password": password}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	resp, err := c.Post(base+"/api/v2/auth/login", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// Item 11: the smaller holes, one subtest each.
func TestAttack11SmallerOnes(t *testing.T) {
	t.Run("a sprayer cannot lock a chosen user out", func(t *testing.T) {
		n := startNode(t, "a11a", "", "", func(c *config.Config) { c.LoginRatePerMinute = 5 })
		n.bootstrap("root", rootPassword)
		attacker := fromAddress("127.0.0.2")
		limited := false
		for i := 0; i < 12 && !limited; i++ {
			limited = loginFrom(t, attacker, n.api, "root", fmt.Sprintf("wrong guess %d", i), nil).status == 429
		}
		if !limited {
			t.Fatal("the per-user-name limit never held")
		}
		// The real user, from elsewhere, is limited too but given a captcha.
		a := loginFrom(t, fromAddress("127.0.0.1"), n.api, "root", rootPassword, nil)
		refused(t, "the user during the spray", a, 429, "rate_limited")
		var e struct{ Details map[string]string }
		a.decode(t, &e)
		id := e.Details["captchaId"]
		if id == "" {
			t.Fatalf("no captcha to get through: %s", a)
		}
		refused(
			t,
			"a wrong captcha answer",
			loginFrom(t, fromAddress("127.0.0.1"), n.api, "root", rootPassword, map[string]string{"captchaId": id, "captchaAnswer": "XXXXXX"}),
			429,
			"rate_limited",
		)
		// Solving it (reading the image: the test asks the node what it shows).
		solved := map[string]string{"captchaId": id, "captchaAnswer": n.s.Sessions.CaptchaAnswer(id)}
		if a := loginFrom(t, fromAddress("127.0.0.1"), n.api, "root", rootPassword, solved); a.status != 200 {
			t.Fatalf("the user with a solved captcha: %s", a)
		}
	})

	t.Run("enrollment is rate-limited and logged once per window", func(t *testing.T) {
		n := startNode(t, "a11b", "", "", nil)
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		statuses := map[int]int{}
		for i := range 30 {
			resp, err := c.Post("https://"+n.s.AgentAddr()+"/agent/v1/enroll", "application/json",
				strings.NewReader(fmt.Sprintf(`{"code":"guess-%d","csr":"x","hostname":"h","agentVersion":"v"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[resp.StatusCode]++
		}
		if statuses[429] < 20 {
			t.Fatalf("30 guessed codes answered %v; the limit did not hold", statuses)
		}
		if lines := strings.Count(n.logs.String(), "enrollment refused"); lines > 2 {
			t.Fatalf("%d log lines for one client's refused enrollments in a window", lines)
		}
	})

	t.Run("X-Real-IP is not believed unless configured", func(t *testing.T) {
		n := startNode(t, "a11c", "", "", func(c *config.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
		tok, _ := apitoken.New()
		op, _ := apitoken.Put(apitoken.Record{TokenID: "office-only", Name: "office", OwnerUserID: "setup", Digest: apitoken.Digest(tok), TokenPrefix: tok[:12],
			Permissions: []string{"system.view"}, AllowedIPs: []string{"203.0.113.0/24"}, CreatedAt: time.Now()})
		if _, err := n.s.Node.Txn(context.Background(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
			t.Fatal(err)
		}
		refused(t, "a forged X-Real-IP", send(t, n.api, request{method: "GET", path: "/api/v2/system/version", token: tok,
			header: http.Header{"X-Real-Ip": {"203.0.113.5"}}}), 401, "api_token_required")
		if a := send(t, n.api, request{method: "GET", path: "/api/v2/system/version", token: tok, header: http.Header{"X-Forwarded-For": {"203.0.113.5"}}}); a.status != 200 {
			t.Fatalf("the trusted proxy's X-Forwarded-For: %s", a)
		}
	})

	t.Run("test e-mails need system.config.manage and are limited", func(t *testing.T) {
		n := startNode(t, "a11d", "", "", nil)
		body := map[string]string{"to": "victim@example.com"}
		refused(t, "a viewer sending mail", n.call("POST", "/api/v2/system/notifications/email/test", n.token("system.view"), body), 403, "permission_denied")
		manager := n.token("system.config.manage")
		codes := map[int]int{}
		for range 6 {
			codes[n.call("POST", "/api/v2/system/notifications/email/test", manager, body).status]++
		}
		if codes[409] != 3 || codes[429] != 3 {
			t.Fatalf("six test e-mails answered %v; want three (SMTP unconfigured, 409) then the limit (429)", codes)
		}
	})

	t.Run("webhook targets hidden in IPv6 or on the node itself", func(t *testing.T) {
		n := startNode(t, "a11e", "", "", nil)
		super := n.token("*")
		targets := []string{"https://[64:ff9b::7f00:1]/hook", "https://[64:ff9b:1::a9fe:a9fe]/latest", "https://[2002:7f00:1::1]/hook",
			"https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook"}
		if own := ownAddress(); own != "" {
			targets = append(targets, "https://"+net.JoinHostPort(own, "8080")+"/hook")
		} else {
			t.Log("this host has no address besides loopback; the own-address case is covered by the webhooks package")
		}
		for i, target := range targets {
			body := map[string]any{"name": fmt.Sprintf("p%d", i), "endpoint": target, "secret": strings.Repeat("s", 16), "enabled": true, "events": []string{"media.*"},
				"timeoutSeconds": 5, "maxAttempts": 3}
			refused(t, target, n.call("POST", "/api/v2/system/webhooks/subscriptions", super, body), 400, "webhook_target_not_allowed")
		}
	})

	t.Run("delivery history does not echo the receiver", func(t *testing.T) {
		n := startNode(t, "a11f", "", "", func(c *config.Config) { c.WebhookAllowPrivateTargets = true })
		super := n.token("*")
		receiver := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, "internal detail: db password hunter2 at 10.9.8.7")
		})}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go receiver.Serve(ln)
		t.Cleanup(func() { receiver.Close() })
		var plan struct{ ID string }
		a := n.call("POST", "/api/v2/system/webhooks/subscriptions", super, map[string]any{"name": "crm", "endpoint": "http://" + ln.Addr().String() + "/hook",
			"secret": strings.Repeat("s", 16), "enabled": true, "events": []string{"media.*"}, "allowHttp": true, "timeoutSeconds": 5, "maxAttempts": 3})
		if a.status != 200 {
			t.Fatalf("plan: %s", a)
		}
		a.decode(t, &plan)
		if a := n.call("POST", "/api/v2/system/webhooks/subscriptions/"+plan.ID+"/test", super, map[string]string{"message": "ping"}); a.status >= 300 {
			t.Fatalf("test event: %s", a)
		}
		viewer := n.token("system.view")
		var history struct {
			Rows []struct {
				LastHTTPStatus *int `json:"lastHttpStatus"`
				ErrorSummary   string
			}
		}
		testkit.Eventually(t, 20*time.Second, "a failed attempt in the history", func() bool {
			a := n.call("GET", "/api/v2/system/webhooks/subscriptions/"+plan.ID+"/deliveries", viewer, nil)
			if strings.Contains(string(a.body), "hunter2") || strings.Contains(string(a.body), "10.9.8.7") {
				t.Fatalf("the history shows the receiver's answer: %s", a)
			}
			json.Unmarshal(a.body, &history)
			return len(history.Rows) > 0 && history.Rows[0].LastHTTPStatus != nil
		})
		if got := history.Rows[0].ErrorSummary; got != "HTTP 500 Internal Server Error" {
			t.Fatalf("error summary %q", got)
		}
	})

	t.Run("lastUsedAt is kept, in batches", func(t *testing.T) {
		n := startNode(t, "a11g", "", "", func(c *config.Config) { c.TokenUsageInterval = time.Second })
		tok := n.token("system.view")
		id := n.tokenIDs[tok]
		time.Sleep(1500 * time.Millisecond) // a flush with nothing to write
		before := n.s.Node.Revision()
		for range 300 {
			if a := n.call("GET", "/api/v2/system/version", tok, nil); a.status != 200 {
				t.Fatalf("use: %s", a)
			}
		}
		if writes := n.s.Node.Revision() - before; writes > 2 {
			t.Fatalf("300 uses of a token wrote %d times", writes)
		}
		super := n.token("*")
		testkit.Eventually(t, 5*time.Second, "lastUsedAt in the listing", func() bool {
			var list struct {
				Rows []struct {
					TokenID    string
					LastUsedAt *time.Time
				}
			}
			n.call("GET", "/api/v2/security/api-tokens?pageSize=100", super, nil).decode(t, &list)
			for _, r := range list.Rows {
				if r.TokenID == id {
					return r.LastUsedAt != nil && time.Since(*r.LastUsedAt) < time.Minute
				}
			}
			return false
		})
	})

	t.Run("command statistics with every filter", func(t *testing.T) {
		n := startNode(t, "a11h", "", "", nil)
		tok := n.token("nodes.view")
		for _, q := range []string{"nodeId=n1", "engineNodeId=n1", "status=Pending", "commandType=agent.ping", "requestedBy=x",
			"localOnly=true", "from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z", "sinceHours=2", "keyword=nightly"} {
			if a := n.call("GET", "/api/v2/node/commands/stats?"+q, tok, nil); a.status != 200 {
				t.Fatalf("stats?%s: %s", q, a)
			}
		}
	})
}

// ownAddress is one of this host's non-loopback addresses, or "".
func ownAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			return ipn.IP.String()
		}
	}
	return ""
}
