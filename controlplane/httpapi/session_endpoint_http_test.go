package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// console is a browser-like client of one control node: it keeps the
// cookies the server sets (honouring their paths) and sends the CSRF header
// the login answer gave it.
type console struct {
	t       *testing.T
	ts      *controlnode.Node
	cookies map[string]*http.Cookie
	csrf    string
	// Header is added to every request (Sec-Fetch-Site, Origin, proxy headers).
	Header http.Header
}

func newConsole(t *testing.T, ts *controlnode.Node) *console {
	return &console{t: t, ts: ts, cookies: map[string]*http.Cookie{}, Header: http.Header{}}
}

func (c *console) Do(method, path string, body any) controlnode.Response {
	c.t.Helper()
	if body == nil {
		return c.doRaw(method, path, "", nil)
	}
	b, _ := json.Marshal(body)
	return c.doRaw(method, path, "application/json", b)
}

// doRaw sends body as it is, with contentType when not empty.
func (c *console) doRaw(method, path, contentType string, body []byte) controlnode.Response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, c.ts.URL+path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.csrf != "" {
		req.Header.Set("X-Svc-Csrf-Token", c.csrf)
	}
	for _, ck := range c.cookies {
		if strings.HasPrefix(path, ck.Path) {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
	}
	r := c.ts.Send(req)
	for _, ck := range (&http.Response{Header: r.Header}).Cookies() {
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return r
}

type consoleSession struct {
	SessionID, CsrfToken string
	Permissions          []string
	AccessExpiresAt      time.Time
}

func (c *console) login(user, password string) controlnode.Response {
	c.t.Helper()
	r := c.Do("POST", "/api/v2/auth/login", map[string]string{"username": user, "password": password})
	// A login whose session write met a change of leader (a loaded
	// machine misses heartbeats) is tried again, as a browser user would.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && leaderChangeAnswer(r); {
		time.Sleep(500 * time.Millisecond)
		r = c.Do("POST", "/api/v2/auth/login", map[string]string{"username": user, "password": password})
	}
	if r.Status == 200 {
		var s consoleSession
		r.JSON(c.t, &s)
		c.csrf = s.CsrfToken
	}
	return r
}

// leaderChangeAnswer says whether an answer is a write cut short by a
// change of leader: its outcome unknown, or no leader to take it.
func leaderChangeAnswer(r controlnode.Response) bool {
	var e struct{ Code string }
	_ = json.Unmarshal(r.Body, &e)
	return r.Status >= 500 && (e.Code == "unknown_outcome" || e.Code == "unavailable")
}

// copyCookies snapshots the cookie values, to replay them later.
func (c *console) copyCookies() map[string]*http.Cookie {
	out := map[string]*http.Cookie{}
	for k, v := range c.cookies {
		cp := *v
		out[k] = &cp
	}
	return out
}

const adminPassword = "correct horse battery staple"

func bootstrapAdmin(t *testing.T, ts *controlnode.Node) {
	t.Helper()
	r := ts.Do("POST", "/api/v2/auth/bootstrap", "", "application/json", []byte(`{"username":"admin","password":"`+adminPassword+`"}`))
	if r.Status != 200 {
		t.Fatalf("bootstrap: %d %s", r.Status, r.Body)
	}
}

// bootstrapAdminWithCode bootstraps with the node's one-time code, read
// from its log as an operator would, for a node whose loopback peers are
// trusted proxies (and so not local).
func bootstrapAdminWithCode(t *testing.T, ts *controlnode.Node, logs *testkit.Output) {
	t.Helper()
	code := regexp.MustCompile(`"bootstrapCode":"([A-Z2-7]+)"`)
	var m []string
	testkit.Eventually(t, 30*time.Second, "the bootstrap code in the node's log", func() bool {
		m = code.FindStringSubmatch(logs.String())
		return m != nil
	})
	req, _ := http.NewRequest("POST", ts.URL+"/api/v2/auth/bootstrap", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Svc-Bootstrap-Code", m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bootstrap with the code: %v %v", resp, err)
	}
	resp.Body.Close()
}

// sessionWith logs in a fresh user whose one custom role grants perms
// ("*" uses the super administrator role).
func sessionWith(ts *controlnode.Node, t *testing.T, perms ...string) *console {
	t.Helper()
	admin := ts.Token("*")
	roleID := "super-admin"
	switch {
	case len(perms) == 1 && perms[0] == "auth":
		roleID = "viewer" // any identity holds "auth"
	case len(perms) != 1 || perms[0] != "*":
		var role struct{ RoleID string }
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("role-%d", time.Now().UnixNano()), "permissions": perms})
		ts.Do("POST", "/api/v2/security/roles", admin, "application/json", body).JSON(t, &role)
		roleID = role.RoleID
	}
	name := fmt.Sprintf("user%d", time.Now().UnixNano())
	body, _ := json.Marshal(map[string]any{"username": name, "password": "a session test password", "roleIds": []string{roleID}})
	if r := ts.Do("POST", "/api/v2/security/users", admin, "application/json", body); r.Status != 200 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	c := newConsole(t, ts)
	if r := c.login(name, "a session test password"); r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	return c
}

func TestConsoleSessionCookiesAndCSRF(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "sess", "", "", nil, logs)
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	r := c.login("admin", adminPassword)
	if r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	if bytes.Contains(r.Body, []byte("svc_sat_")) || bytes.Contains(r.Body, []byte("svc_srt_")) {
		t.Fatalf("the login body carries a token: %s", r.Body)
	}
	sess, refresh := c.cookies["svc_session"], c.cookies["svc_refresh"]
	if sess == nil || refresh == nil {
		t.Fatalf("cookies set: %v", r.Header.Values("Set-Cookie"))
	}
	for _, ck := range []*http.Cookie{sess, refresh} {
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
			t.Fatalf("cookie %s: HttpOnly=%v SameSite=%v Secure=%v over plain HTTP", ck.Name, ck.HttpOnly, ck.SameSite, ck.Secure)
		}
	}
	if sess.Path != "/" || refresh.Path != "/api/v2/auth" || !strings.HasPrefix(sess.Value, "svc_sat_") {
		t.Fatalf("cookie paths %q %q", sess.Path, refresh.Path)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatal("login answer may be cached")
	}

	// The session authenticates reads; auth/me gives the CSRF token back.
	var me struct {
		CredentialKind, CredentialID string
		CsrfToken                    *string
		Permissions                  []string
	}
	c.Do("GET", "/api/v2/auth/me", nil).JSON(t, &me)
	if me.CredentialKind != "console-session" || me.CsrfToken == nil || *me.CsrfToken != c.csrf || len(me.Permissions) != 1 || me.Permissions[0] != "*" {
		t.Fatalf("auth/me: %+v", me)
	}

	// Unsafe requests need the CSRF header and a same-origin browser context.
	role := map[string]any{"name": "viewers", "permissions": []string{"channels.view"}}
	csrf := c.csrf
	c.csrf = ""
	checkErrorBody(t, c.Do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	c.csrf = "d3Jvbmc"
	checkErrorBody(t, c.Do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	c.csrf = csrf
	for _, h := range []http.Header{{"Sec-Fetch-Site": {"cross-site"}}, {"Sec-Fetch-Site": {"same-site"}}, {"Origin": {"https://evil.example"}}, {"Origin": {"null"}}} {
		c.Header = h
		checkErrorBody(t, c.Do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	}
	c.Header = http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"http://" + ts.S.HTTPAddr}}
	if r := c.Do("POST", "/api/v2/security/roles", role); r.Status != 200 {
		t.Fatalf("same-origin request with the CSRF header: %d %s", r.Status, r.Body)
	}
	// Reads need no CSRF header.
	c.csrf = ""
	if r := c.Do("GET", "/api/v2/security/roles", nil); r.Status != 200 {
		t.Fatalf("read without CSRF header: %d", r.Status)
	}
	c.csrf = csrf
	// A cross-site login is refused too (login CSRF).
	c.Header = http.Header{"Sec-Fetch-Site": {"cross-site"}}
	checkErrorBody(t, c.Do("POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": adminPassword}), 403, "csrf_rejected")
	c.Header = http.Header{}

	// The console access token is not an API token.
	checkErrorBody(t, ts.Get("/api/v2/auth/me", sess.Value), 401, "api_token_required")
	// A bearer header wins over the cookie: a bad token is not rescued by it.
	req, _ := http.NewRequest("GET", ts.URL+"/api/v2/auth/me", nil)
	req.Header.Set("Authorization", "Bearer svc_pat_nonsense")
	req.AddCookie(&http.Cookie{Name: "svc_session", Value: sess.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("bad bearer with a good cookie: %d", resp.StatusCode)
	}

	// A third-party operation refuses sessions.
	checkErrorBody(t, c.Do("GET", "/api/v2/third-party/capabilities", nil), 401, "api_token_required")

	// Wrong passwords: one clear code that does not say whether the user exists.
	checkErrorBody(t, newConsole(t, ts).login("admin", "not the password at all"), 401, "invalid_credentials")
	checkErrorBody(t, newConsole(t, ts).login("nobody", "not the password at all"), 401, "invalid_credentials")

	// Logout revokes server-side: a replayed cookie is refused.
	old := c.copyCookies()
	if r := c.Do("POST", "/api/v2/auth/logout", nil); r.Status != 200 {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	if len(c.cookies) != 0 {
		t.Fatalf("logout left cookies: %v", c.cookies)
	}
	c.cookies = old
	checkErrorBody(t, c.Do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, c.Do("POST", "/api/v2/auth/refresh", nil), 401, "session_expired")

	for _, secret := range []string{adminPassword, sess.Value, refresh.Value, csrf} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a secret reached the logs: %.12s...", secret)
		}
	}
	// Every login outcome is audited.
	admin := ts.Token("*")
	var audit struct {
		Rows []struct{ EventType, Outcome, ClientAddress, TraceID string }
	}
	ts.Get("/api/v2/security/audit?eventType=security.login&pageSize=50", admin).JSON(t, &audit)
	ok, failed := 0, 0
	for _, a := range audit.Rows {
		switch a.Outcome {
		case "success":
			ok++
		case "failure":
			failed++
		}
		if a.ClientAddress == "" || a.TraceID == "" {
			t.Fatalf("audit record without client or trace: %+v", a)
		}
	}
	if ok != 1 || failed != 2 {
		t.Fatalf("audit has %d successful and %d failed logins, want 1 and 2", ok, failed)
	}
}

func TestSessionCookiesBehindTLSProxy(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "tls", "", "", func(c *config.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} }, logs)
	bootstrapAdminWithCode(t, ts, logs)
	c := newConsole(t, ts)
	c.Header = http.Header{"X-Forwarded-Proto": {"https"}}
	if r := c.login("admin", adminPassword); r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	sess, refresh := c.cookies["__Host-svc_session"], c.cookies["__Secure-svc_refresh"]
	if sess == nil || refresh == nil || !sess.Secure || !refresh.Secure || sess.Path != "/" || sess.Domain != "" {
		t.Fatalf("TLS cookies: %v", c.cookies)
	}
	if r := c.Do("GET", "/api/v2/auth/me", nil); r.Status != 200 {
		t.Fatalf("TLS session: %d", r.Status)
	}
	// Over plain HTTP the unprefixed name is what counts, so a __Host-
	// cookie is not accepted there and the secure one cannot be shadowed.
	c.Header = http.Header{}
	checkErrorBody(t, c.Do("GET", "/api/v2/auth/me", nil), 401, "authentication_required")
}

func TestRefreshRotatesAndReuseRevokesTheFamily(t *testing.T) {
	ts := controlnode.StartNode(t, "rot", "", "")
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	if r := c.login("admin", adminPassword); r.Status != 200 {
		t.Fatal(string(r.Body))
	}
	first := c.copyCookies()
	var s consoleSession
	r := c.Do("POST", "/api/v2/auth/refresh", nil)
	r.JSON(t, &s)
	if r.Status != 200 || s.CsrfToken != c.csrf {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	if c.cookies["svc_refresh"].Value == first["svc_refresh"].Value || c.cookies["svc_session"].Value == first["svc_session"].Value {
		t.Fatal("refresh did not rotate the tokens")
	}
	// Refresh needs the CSRF header.
	csrf := c.csrf
	c.csrf = ""
	checkErrorBody(t, c.Do("POST", "/api/v2/auth/refresh", nil), 403, "csrf_rejected")
	c.csrf = csrf
	second := c.copyCookies()
	if r := c.Do("GET", "/api/v2/auth/me", nil); r.Status != 200 {
		t.Fatalf("after refresh: %d", r.Status)
	}
	// The first refresh token is presented again: someone copied it. The
	// whole family ends, including the tokens the legitimate refresh issued.
	thief := newConsole(t, ts)
	thief.cookies, thief.csrf = first, csrf
	checkErrorBody(t, thief.Do("POST", "/api/v2/auth/refresh", nil), 401, "refresh_token_reused")
	c.cookies = second
	checkErrorBody(t, c.Do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	c.cookies = second
	checkErrorBody(t, c.Do("POST", "/api/v2/auth/refresh", nil), 401, "session_expired")

	// Two refreshes racing with one token: at most one wins, and the family
	// does not survive the loser's reuse.
	c2 := newConsole(t, ts)
	if r := c2.login("admin", adminPassword); r.Status != 200 {
		t.Fatal(string(r.Body))
	}
	snap := c2.copyCookies()
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cc := newConsole(t, ts)
			cc.cookies, cc.csrf = map[string]*http.Cookie{"svc_refresh": snap["svc_refresh"]}, c2.csrf
			codes[i] = cc.Do("POST", "/api/v2/auth/refresh", nil).Status
		}(i)
	}
	wg.Wait()
	if codes[0] == 200 && codes[1] == 200 {
		t.Fatalf("one refresh token was rotated twice: %v", codes)
	}
}

func TestCaptchaAfterFailedLoginsAndRateLimit(t *testing.T) {
	ts := controlnode.StartNodeWith(t, "cap", "", "", func(c *config.Config) { c.LoginRatePerMinute = 12 }, nil)
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	for i := 0; i < 4; i++ {
		checkErrorBody(t, c.login("admin", fmt.Sprintf("wrong password %d", i)), 401, "invalid_credentials")
	}
	// The fifth failure reaches the threshold: its answer names a captcha.
	r := c.login("admin", "wrong password 5")
	checkErrorBody(t, r, 401, "invalid_credentials")
	var e struct{ Details map[string]string }
	r.JSON(t, &e)
	first := e.Details["captchaId"]
	if first == "" || e.Details["captchaRequired"] != "true" {
		t.Fatalf("fifth failure names no captcha: %s", r.Body)
	}
	// Even the right password needs the captcha now.
	r = c.login("admin", adminPassword)
	checkErrorBody(t, r, 401, "captcha_required")
	r.JSON(t, &e)
	if e.Details["captchaId"] == "" {
		t.Fatalf("captcha_required without an id: %s", r.Body)
	}
	// The image is a real PNG, never cached.
	img := ts.Get("/api/v2/auth/captcha/"+first, "")
	if img.Status != 200 || img.Header.Get("Content-Type") != "image/png" || img.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("captcha image: %d %v", img.Status, img.Header)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img.Body)); err != nil || cfg.Width < 100 || cfg.Height < 40 {
		t.Fatalf("captcha is not a readable PNG: %v %+v", err, cfg)
	}
	// Refresh invalidates the old challenge and issues a new one.
	var ch struct{ CaptchaID, ImageURL string }
	ts.Do("POST", "/api/v2/auth/captcha/"+first+"/refresh", "", "", nil).JSON(t, &ch)
	if ch.CaptchaID == "" || ch.CaptchaID == first || ch.ImageURL != "/api/v2/auth/captcha/"+ch.CaptchaID {
		t.Fatalf("captcha refresh: %+v", ch)
	}
	checkErrorBody(t, ts.Get("/api/v2/auth/captcha/"+first, ""), 404, "not_found")
	if ts.Get("/api/v2/auth/captcha/"+ch.CaptchaID, "").Status != 200 {
		t.Fatal("the new challenge does not render")
	}
	// A wrong answer consumes the challenge and names the next one.
	r = c.Do("POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": adminPassword, "captchaId": ch.CaptchaID, "captchaAnswer": "XXXXXX"})
	checkErrorBody(t, r, 401, "captcha_invalid")
	r.JSON(t, &e)
	if e.Details["captchaId"] == "" || e.Details["captchaId"] == ch.CaptchaID {
		t.Fatalf("no fresh captcha after a wrong answer: %s", r.Body)
	}
	checkErrorBody(t, ts.Get("/api/v2/auth/captcha/"+ch.CaptchaID, ""), 404, "not_found")

	// Rate limit: with 12 per minute the address runs out within a burst.
	limited := false
	for i := 0; i < 20 && !limited; i++ {
		r := c.login(fmt.Sprintf("user%d", i), "whatever password")
		if r.Status == 429 {
			checkErrorBody(t, r, 429, "rate_limited")
			if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
				t.Fatalf("429 without Retry-After: %v", r.Header)
			}
			limited = true
		}
	}
	if !limited {
		t.Fatal("twenty rapid logins from one address were never limited")
	}
}

func TestSessionRevocationSeenOnEveryNode(t *testing.T) {
	a := controlnode.StartNode(t, "sa", "", "")
	b := controlnode.StartNode(t, "sb", a.URL, a.KeyFile())
	cn := controlnode.StartNode(t, "sc", a.URL, a.KeyFile())
	bootstrapAdmin(t, a)
	admin := a.Token("*")
	var user struct{ UserID string }
	a.Do("POST", "/api/v2/security/users", admin, "application/json",
		[]byte(`{"username":"operator1","password":"operator password 123","roleIds":["operator"]}`)).JSON(t, &user)
	if user.UserID == "" {
		t.Fatal("user not created")
	}
	var role struct{ RoleID string }
	a.Do("POST", "/api/v2/security/roles", admin, "application/json", []byte(`{"name":"watchers","permissions":["channels.view"]}`)).JSON(t, &role)

	revocations := []struct {
		name   string
		revoke func(t *testing.T)
	}{
		{"session revoke", func(t *testing.T) {
			if r := b.Do("POST", "/api/v2/security/users/"+user.UserID+"/sessions/revoke", admin, "", nil); r.Status != 200 {
				t.Fatalf("revoke: %s", r.Body)
			}
		}},
		{"role change", func(t *testing.T) {
			if r := b.Do("PUT", "/api/v2/security/users/"+user.UserID, admin, "application/json", []byte(`{"roleIds":["viewer"]}`)); r.Status != 200 {
				t.Fatalf("role change: %s", r.Body)
			}
		}},
		{"role permissions change", func(t *testing.T) {
			if r := b.Do("PUT", "/api/v2/security/users/"+user.UserID, admin, "application/json", []byte(`{"roleIds":["`+role.RoleID+`"]}`)); r.Status != 200 {
				t.Fatalf("bind: %s", r.Body)
			}
			// The bind itself ends the session; the subtest logs in again and
			// then changes the role's permissions.
		}},
		{"admin password reset", func(t *testing.T) {
			if r := b.Do("POST", "/api/v2/security/users/"+user.UserID+"/password", admin, "application/json", []byte(`{"newPassword":"operator password 456"}`)); r.Status != 200 {
				t.Fatalf("reset: %s", r.Body)
			}
		}},
	}
	password := "operator password 123"
	for _, rv := range revocations {
		t.Run(rv.name, func(t *testing.T) {
			c := newConsole(t, a)
			if r := c.login("operator1", password); r.Status != 200 {
				t.Fatalf("login: %s", r.Body)
			}
			for _, node := range []*controlnode.Node{a, b, cn} {
				c.ts = node
				if r := c.Do("GET", "/api/v2/auth/me", nil); r.Status != 200 {
					t.Fatalf("session on %s before revocation: %d", node.S.Config.NodeID, r.Status)
				}
			}
			rv.revoke(t)
			if rv.name == "role permissions change" {
				c = newConsole(t, a)
				if r := c.login("operator1", password); r.Status != 200 {
					t.Fatalf("login: %s", r.Body)
				}
				body := []byte(`{"name":"watchers","permissions":["channels.view","streams.view"]}`)
				if r := b.Do("PUT", "/api/v2/security/roles/"+role.RoleID, admin, "application/json", body); r.Status != 200 {
					t.Fatalf("role update: %s", r.Body)
				}
			}
			if rv.name == "admin password reset" {
				password = "operator password 456"
			}
			// The very next request on every node is refused.
			for _, node := range []*controlnode.Node{cn, a, b} {
				c.ts = node
				checkErrorBody(t, c.Do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
			}
		})
	}
	// Soft delete ends sessions and revokes the user's API tokens.
	c := newConsole(t, a)
	if r := c.login("operator1", password); r.Status != 200 {
		t.Fatalf("login: %s", r.Body)
	}
	tok := tokenOwnedBy(a, t, user.UserID, "channels.view")
	if r := b.Do("DELETE", "/api/v2/security/users/"+user.UserID, admin, "", nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	c.ts = cn
	checkErrorBody(t, c.Do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, cn.Get("/api/v2/auth/me", tok), 401, "api_token_required")
}

func TestChangeOwnPassword(t *testing.T) {
	ts := controlnode.StartNode(t, "pw", "", "")
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	if r := c.login("admin", adminPassword); r.Status != 200 {
		t.Fatal(string(r.Body))
	}
	other := newConsole(t, ts)
	if r := other.login("admin", adminPassword); r.Status != 200 {
		t.Fatal(string(r.Body))
	}
	checkErrorBody(
		t,
		c.Do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": "wrong one", "newPassword": "a brand new passphrase"}),
		403,
		"invalid_credentials",
	)
	checkErrorBody(t, c.Do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": adminPassword, "newPassword": "short"}), 400, "invalid_body")
	if r := c.Do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": adminPassword, "newPassword": "a brand new passphrase"}); r.Status != 200 {
		t.Fatalf("change: %d %s", r.Status, r.Body)
	}
	// Every session of the user ended, this one included.
	checkErrorBody(t, other.Do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, newConsole(t, ts).login("admin", adminPassword), 401, "invalid_credentials")
	if r := newConsole(t, ts).login("admin", "a brand new passphrase"); r.Status != 200 {
		t.Fatalf("login with the new password: %d", r.Status)
	}
}
