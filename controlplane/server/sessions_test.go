package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
)

// console is a browser-like client of one control node: it keeps the
// cookies the server sets (honouring their paths) and sends the CSRF header
// the login answer gave it.
type console struct {
	t       *testing.T
	ts      *testServer
	cookies map[string]*http.Cookie
	csrf    string
	// header is added to every request (Sec-Fetch-Site, Origin, proxy headers).
	header http.Header
}

func newConsole(t *testing.T, ts *testServer) *console {
	return &console{t: t, ts: ts, cookies: map[string]*http.Cookie{}, header: http.Header{}}
}

func (c *console) do(method, path string, body any) response {
	c.t.Helper()
	if body == nil {
		return c.doRaw(method, path, "", nil)
	}
	b, _ := json.Marshal(body)
	return c.doRaw(method, path, "application/json", b)
}

// doRaw sends body as it is, with contentType when not empty.
func (c *console) doRaw(method, path, contentType string, body []byte) response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, c.ts.url+path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range c.header {
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
	resp, err := noRedirects.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, ck := range resp.Cookies() {
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

var noRedirects = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type consoleSession struct {
	SessionID, CsrfToken string
	Permissions          []string
	AccessExpiresAt      time.Time
}

func (c *console) login(user, password string) response {
	c.t.Helper()
	r := c.do("POST", "/api/v2/auth/login", map[string]string{"username": user, "password": password})
	if r.status == 200 {
		var s consoleSession
		r.json(c.t, &s)
		c.csrf = s.CsrfToken
	}
	return r
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

func bootstrapAdmin(t *testing.T, ts *testServer) {
	t.Helper()
	r := ts.do("POST", "/api/v2/auth/bootstrap", "", "application/json", []byte(`{"username":"admin","password":"`+adminPassword+`"}`))
	if r.status != 200 {
		t.Fatalf("bootstrap: %d %s", r.status, r.body)
	}
}

// bootstrapAdminWithCode bootstraps with the node's one-time code, for a
// node whose loopback peers are trusted proxies (and so not local).
func bootstrapAdminWithCode(t *testing.T, ts *testServer) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.url+"/api/v2/auth/bootstrap", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Svc-Bootstrap-Code", ts.s.bootstrapCode)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bootstrap with the code: %v %v", resp, err)
	}
	resp.Body.Close()
}

// sessionWith logs in a fresh user whose one custom role grants perms
// ("*" uses the super administrator role).
func (ts *testServer) sessionWith(t *testing.T, perms ...string) *console {
	t.Helper()
	admin := ts.token("*")
	roleID := "super-admin"
	switch {
	case len(perms) == 1 && perms[0] == "auth":
		roleID = "viewer" // any identity holds "auth"
	case len(perms) != 1 || perms[0] != "*":
		var role struct{ RoleID string }
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("role-%d", time.Now().UnixNano()), "permissions": perms})
		ts.do("POST", "/api/v2/security/roles", admin, "application/json", body).json(t, &role)
		roleID = role.RoleID
	}
	name := fmt.Sprintf("user%d", time.Now().UnixNano())
	body, _ := json.Marshal(map[string]any{"username": name, "password": "a session test password", "roleIds": []string{roleID}})
	if r := ts.do("POST", "/api/v2/security/users", admin, "application/json", body); r.status != 200 {
		t.Fatalf("create user: %d %s", r.status, r.body)
	}
	c := newConsole(t, ts)
	if r := c.login(name, "a session test password"); r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	return c
}

func TestConsoleSessionCookiesAndCSRF(t *testing.T) {
	logs := &logBuffer{}
	ts := startServerWith(t, "sess", "", "", nil, logs)
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	r := c.login("admin", adminPassword)
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte("svc_sat_")) || bytes.Contains(r.body, []byte("svc_srt_")) {
		t.Fatalf("the login body carries a token: %s", r.body)
	}
	sess, refresh := c.cookies["svc_session"], c.cookies["svc_refresh"]
	if sess == nil || refresh == nil {
		t.Fatalf("cookies set: %v", r.header.Values("Set-Cookie"))
	}
	for _, ck := range []*http.Cookie{sess, refresh} {
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
			t.Fatalf("cookie %s: HttpOnly=%v SameSite=%v Secure=%v over plain HTTP", ck.Name, ck.HttpOnly, ck.SameSite, ck.Secure)
		}
	}
	if sess.Path != "/" || refresh.Path != "/api/v2/auth" || !strings.HasPrefix(sess.Value, "svc_sat_") {
		t.Fatalf("cookie paths %q %q", sess.Path, refresh.Path)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatal("login answer may be cached")
	}

	// The session authenticates reads; auth/me gives the CSRF token back.
	var me struct {
		CredentialKind, CredentialID string
		CsrfToken                    *string
		Permissions                  []string
	}
	c.do("GET", "/api/v2/auth/me", nil).json(t, &me)
	if me.CredentialKind != "console-session" || me.CsrfToken == nil || *me.CsrfToken != c.csrf || len(me.Permissions) != 1 || me.Permissions[0] != "*" {
		t.Fatalf("auth/me: %+v", me)
	}

	// Unsafe requests need the CSRF header and a same-origin browser context.
	role := map[string]any{"name": "viewers", "permissions": []string{"channels.view"}}
	csrf := c.csrf
	c.csrf = ""
	checkErrorBody(t, c.do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	c.csrf = "d3Jvbmc"
	checkErrorBody(t, c.do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	c.csrf = csrf
	for _, h := range []http.Header{{"Sec-Fetch-Site": {"cross-site"}}, {"Sec-Fetch-Site": {"same-site"}}, {"Origin": {"https://evil.example"}}, {"Origin": {"null"}}} {
		c.header = h
		checkErrorBody(t, c.do("POST", "/api/v2/security/roles", role), 403, "csrf_rejected")
	}
	c.header = http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"http://" + ts.s.HTTPAddr}}
	if r := c.do("POST", "/api/v2/security/roles", role); r.status != 200 {
		t.Fatalf("same-origin request with the CSRF header: %d %s", r.status, r.body)
	}
	// Reads need no CSRF header.
	c.csrf = ""
	if r := c.do("GET", "/api/v2/security/roles", nil); r.status != 200 {
		t.Fatalf("read without CSRF header: %d", r.status)
	}
	c.csrf = csrf
	// A cross-site login is refused too (login CSRF).
	c.header = http.Header{"Sec-Fetch-Site": {"cross-site"}}
	checkErrorBody(t, c.do("POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": adminPassword}), 403, "csrf_rejected")
	c.header = http.Header{}

	// The console access token is not an API token.
	checkErrorBody(t, ts.get("/api/v2/auth/me", sess.Value), 401, "api_token_required")
	// A bearer header wins over the cookie: a bad token is not rescued by it.
	req, _ := http.NewRequest("GET", ts.url+"/api/v2/auth/me", nil)
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
	checkErrorBody(t, c.do("GET", "/api/v2/third-party/capabilities", nil), 401, "api_token_required")

	// Wrong passwords: one clear code that does not say whether the user exists.
	checkErrorBody(t, newConsole(t, ts).login("admin", "not the password at all"), 401, "invalid_credentials")
	checkErrorBody(t, newConsole(t, ts).login("nobody", "not the password at all"), 401, "invalid_credentials")

	// Logout revokes server-side: a replayed cookie is refused.
	old := c.copyCookies()
	if r := c.do("POST", "/api/v2/auth/logout", nil); r.status != 200 {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	if len(c.cookies) != 0 {
		t.Fatalf("logout left cookies: %v", c.cookies)
	}
	c.cookies = old
	checkErrorBody(t, c.do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, c.do("POST", "/api/v2/auth/refresh", nil), 401, "session_expired")

	for _, secret := range []string{adminPassword, sess.Value, refresh.Value, csrf} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a secret reached the logs: %.12s...", secret)
		}
	}
	// Every login outcome is audited.
	admin := ts.token("*")
	var audit struct {
		Rows []struct{ EventType, Outcome, ClientAddress, TraceID string }
	}
	ts.get("/api/v2/security/audit?eventType=security.login&pageSize=50", admin).json(t, &audit)
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
	ts := startServerWith(t, "tls", "", "", func(c *config.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} }, nil)
	bootstrapAdminWithCode(t, ts)
	c := newConsole(t, ts)
	c.header = http.Header{"X-Forwarded-Proto": {"https"}}
	if r := c.login("admin", adminPassword); r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	sess, refresh := c.cookies["__Host-svc_session"], c.cookies["__Secure-svc_refresh"]
	if sess == nil || refresh == nil || !sess.Secure || !refresh.Secure || sess.Path != "/" || sess.Domain != "" {
		t.Fatalf("TLS cookies: %v", c.cookies)
	}
	if r := c.do("GET", "/api/v2/auth/me", nil); r.status != 200 {
		t.Fatalf("TLS session: %d", r.status)
	}
	// Over plain HTTP the unprefixed name is what counts, so a __Host-
	// cookie is not accepted there and the secure one cannot be shadowed.
	c.header = http.Header{}
	checkErrorBody(t, c.do("GET", "/api/v2/auth/me", nil), 401, "authentication_required")
}

func TestRefreshRotatesAndReuseRevokesTheFamily(t *testing.T) {
	ts := startServer(t, "rot", "", "")
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	if r := c.login("admin", adminPassword); r.status != 200 {
		t.Fatal(string(r.body))
	}
	first := c.copyCookies()
	var s consoleSession
	r := c.do("POST", "/api/v2/auth/refresh", nil)
	r.json(t, &s)
	if r.status != 200 || s.CsrfToken != c.csrf {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	if c.cookies["svc_refresh"].Value == first["svc_refresh"].Value || c.cookies["svc_session"].Value == first["svc_session"].Value {
		t.Fatal("refresh did not rotate the tokens")
	}
	// Refresh needs the CSRF header.
	csrf := c.csrf
	c.csrf = ""
	checkErrorBody(t, c.do("POST", "/api/v2/auth/refresh", nil), 403, "csrf_rejected")
	c.csrf = csrf
	second := c.copyCookies()
	if r := c.do("GET", "/api/v2/auth/me", nil); r.status != 200 {
		t.Fatalf("after refresh: %d", r.status)
	}
	// The first refresh token is presented again: someone copied it. The
	// whole family ends, including the tokens the legitimate refresh issued.
	thief := newConsole(t, ts)
	thief.cookies, thief.csrf = first, csrf
	checkErrorBody(t, thief.do("POST", "/api/v2/auth/refresh", nil), 401, "refresh_token_reused")
	c.cookies = second
	checkErrorBody(t, c.do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	c.cookies = second
	checkErrorBody(t, c.do("POST", "/api/v2/auth/refresh", nil), 401, "session_expired")

	// Two refreshes racing with one token: at most one wins, and the family
	// does not survive the loser's reuse.
	c2 := newConsole(t, ts)
	if r := c2.login("admin", adminPassword); r.status != 200 {
		t.Fatal(string(r.body))
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
			codes[i] = cc.do("POST", "/api/v2/auth/refresh", nil).status
		}(i)
	}
	wg.Wait()
	if codes[0] == 200 && codes[1] == 200 {
		t.Fatalf("one refresh token was rotated twice: %v", codes)
	}
}

func TestCaptchaAfterFailedLoginsAndRateLimit(t *testing.T) {
	ts := startServerWith(t, "cap", "", "", func(c *config.Config) { c.LoginRatePerMinute = 12 }, nil)
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	for i := 0; i < 4; i++ {
		checkErrorBody(t, c.login("admin", fmt.Sprintf("wrong password %d", i)), 401, "invalid_credentials")
	}
	// The fifth failure reaches the threshold: its answer names a captcha.
	r := c.login("admin", "wrong password 5")
	checkErrorBody(t, r, 401, "invalid_credentials")
	var e struct{ Details map[string]string }
	r.json(t, &e)
	first := e.Details["captchaId"]
	if first == "" || e.Details["captchaRequired"] != "true" {
		t.Fatalf("fifth failure names no captcha: %s", r.body)
	}
	// Even the right password needs the captcha now.
	r = c.login("admin", adminPassword)
	checkErrorBody(t, r, 401, "captcha_required")
	r.json(t, &e)
	if e.Details["captchaId"] == "" {
		t.Fatalf("captcha_required without an id: %s", r.body)
	}
	// The image is a real PNG, never cached.
	img := ts.get("/api/v2/auth/captcha/"+first, "")
	if img.status != 200 || img.header.Get("Content-Type") != "image/png" || img.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("captcha image: %d %v", img.status, img.header)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img.body)); err != nil || cfg.Width < 100 || cfg.Height < 40 {
		t.Fatalf("captcha is not a readable PNG: %v %+v", err, cfg)
	}
	// Refresh invalidates the old challenge and issues a new one.
	var ch struct{ CaptchaID, ImageURL string }
	ts.do("POST", "/api/v2/auth/captcha/"+first+"/refresh", "", "", nil).json(t, &ch)
	if ch.CaptchaID == "" || ch.CaptchaID == first || ch.ImageURL != "/api/v2/auth/captcha/"+ch.CaptchaID {
		t.Fatalf("captcha refresh: %+v", ch)
	}
	checkErrorBody(t, ts.get("/api/v2/auth/captcha/"+first, ""), 404, "not_found")
	if ts.get("/api/v2/auth/captcha/"+ch.CaptchaID, "").status != 200 {
		t.Fatal("the new challenge does not render")
	}
	// A wrong answer consumes the challenge and names the next one.
	r = c.do("POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": adminPassword, "captchaId": ch.CaptchaID, "captchaAnswer": "XXXXXX"})
	checkErrorBody(t, r, 401, "captcha_invalid")
	r.json(t, &e)
	if e.Details["captchaId"] == "" || e.Details["captchaId"] == ch.CaptchaID {
		t.Fatalf("no fresh captcha after a wrong answer: %s", r.body)
	}
	checkErrorBody(t, ts.get("/api/v2/auth/captcha/"+ch.CaptchaID, ""), 404, "not_found")

	// Rate limit: with 12 per minute the address runs out within a burst.
	limited := false
	for i := 0; i < 20 && !limited; i++ {
		r := c.login(fmt.Sprintf("user%d", i), "whatever password")
		if r.status == 429 {
			checkErrorBody(t, r, 429, "rate_limited")
			if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
				t.Fatalf("429 without Retry-After: %v", r.header)
			}
			limited = true
		}
	}
	if !limited {
		t.Fatal("twenty rapid logins from one address were never limited")
	}
}

func TestSessionRevocationSeenOnEveryNode(t *testing.T) {
	a := startServer(t, "sa", "", "")
	b := startServer(t, "sb", a.url, a.keyFile())
	cn := startServer(t, "sc", a.url, a.keyFile())
	bootstrapAdmin(t, a)
	admin := a.token("*")
	var user struct{ UserID string }
	a.do("POST", "/api/v2/security/users", admin, "application/json",
		[]byte(`{"username":"operator1","password":"operator password 123","roleIds":["operator"]}`)).json(t, &user)
	if user.UserID == "" {
		t.Fatal("user not created")
	}
	var role struct{ RoleID string }
	a.do("POST", "/api/v2/security/roles", admin, "application/json", []byte(`{"name":"watchers","permissions":["channels.view"]}`)).json(t, &role)

	revocations := []struct {
		name   string
		revoke func(t *testing.T)
	}{
		{"session revoke", func(t *testing.T) {
			if r := b.do("POST", "/api/v2/security/users/"+user.UserID+"/sessions/revoke", admin, "", nil); r.status != 200 {
				t.Fatalf("revoke: %s", r.body)
			}
		}},
		{"role change", func(t *testing.T) {
			if r := b.do("PUT", "/api/v2/security/users/"+user.UserID, admin, "application/json", []byte(`{"roleIds":["viewer"]}`)); r.status != 200 {
				t.Fatalf("role change: %s", r.body)
			}
		}},
		{"role permissions change", func(t *testing.T) {
			if r := b.do("PUT", "/api/v2/security/users/"+user.UserID, admin, "application/json", []byte(`{"roleIds":["`+role.RoleID+`"]}`)); r.status != 200 {
				t.Fatalf("bind: %s", r.body)
			}
			// The bind itself ends the session; the subtest logs in again and
			// then changes the role's permissions.
		}},
		{"admin password reset", func(t *testing.T) {
			if r := b.do("POST", "/api/v2/security/users/"+user.UserID+"/password", admin, "application/json", []byte(`{"newPassword":"operator password 456"}`)); r.status != 200 {
				t.Fatalf("reset: %s", r.body)
			}
		}},
	}
	password := "operator password 123"
	for _, rv := range revocations {
		t.Run(rv.name, func(t *testing.T) {
			c := newConsole(t, a)
			if r := c.login("operator1", password); r.status != 200 {
				t.Fatalf("login: %s", r.body)
			}
			for _, node := range []*testServer{a, b, cn} {
				c.ts = node
				if r := c.do("GET", "/api/v2/auth/me", nil); r.status != 200 {
					t.Fatalf("session on %s before revocation: %d", node.s.Config.NodeID, r.status)
				}
			}
			rv.revoke(t)
			if rv.name == "role permissions change" {
				c = newConsole(t, a)
				if r := c.login("operator1", password); r.status != 200 {
					t.Fatalf("login: %s", r.body)
				}
				body := []byte(`{"name":"watchers","permissions":["channels.view","streams.view"]}`)
				if r := b.do("PUT", "/api/v2/security/roles/"+role.RoleID, admin, "application/json", body); r.status != 200 {
					t.Fatalf("role update: %s", r.body)
				}
			}
			if rv.name == "admin password reset" {
				password = "operator password 456"
			}
			// The very next request on every node is refused.
			for _, node := range []*testServer{cn, a, b} {
				c.ts = node
				checkErrorBody(t, c.do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
			}
		})
	}
	// Soft delete ends sessions and revokes the user's API tokens.
	c := newConsole(t, a)
	if r := c.login("operator1", password); r.status != 200 {
		t.Fatalf("login: %s", r.body)
	}
	tok := a.tokenOwnedBy(t, user.UserID, "channels.view")
	if r := b.do("DELETE", "/api/v2/security/users/"+user.UserID, admin, "", nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	c.ts = cn
	checkErrorBody(t, c.do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, cn.get("/api/v2/auth/me", tok), 401, "api_token_required")
}

func TestChangeOwnPassword(t *testing.T) {
	ts := startServer(t, "pw", "", "")
	bootstrapAdmin(t, ts)
	c := newConsole(t, ts)
	if r := c.login("admin", adminPassword); r.status != 200 {
		t.Fatal(string(r.body))
	}
	other := newConsole(t, ts)
	if r := other.login("admin", adminPassword); r.status != 200 {
		t.Fatal(string(r.body))
	}
	checkErrorBody(
		t,
		c.do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": "wrong one", "newPassword": "a brand new passphrase"}),
		403,
		"invalid_credentials",
	)
	checkErrorBody(t, c.do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": adminPassword, "newPassword": "short"}), 400, "invalid_body")
	if r := c.do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": adminPassword, "newPassword": "a brand new passphrase"}); r.status != 200 {
		t.Fatalf("change: %d %s", r.status, r.body)
	}
	// Every session of the user ended, this one included.
	checkErrorBody(t, other.do("GET", "/api/v2/auth/me", nil), 401, "session_expired")
	checkErrorBody(t, newConsole(t, ts).login("admin", adminPassword), 401, "invalid_credentials")
	if r := newConsole(t, ts).login("admin", "a brand new passphrase"); r.status != 200 {
		t.Fatalf("login with the new password: %d", r.status)
	}
}
