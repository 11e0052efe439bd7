package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/session"
	"github.com/svcplatform/svc/controlplane/store/revcache"
)

// CSRFHeader carries the session's CSRF token on state-changing requests
// authenticated by the session cookie.
const CSRFHeader = "X-Svc-Csrf-Token"

// Credentials authenticates a request by its bearer API token or, when it
// has none, by its console session cookie. A request with an Authorization
// header is judged by that header alone, so a cookie can never stand in for
// a refused token.
type Credentials struct {
	Tokens   APITokenAuth
	Sessions *SessionAuth
	// Snapshots checks a snapshot access ticket, which stands in for the
	// credential on one channel's snapshot image and nowhere else.
	Snapshots func(channelID, ticket string) (action string, err error)
}

// Authenticate implements Authenticator.
func (c Credentials) Authenticate(r *http.Request, clientIP net.IP) (*identity.Identity, error) {
	if r.Header.Get("Authorization") != "" || c.Sessions == nil {
		return c.Tokens.Authenticate(r, clientIP)
	}
	if id, ok := c.snapshotTicket(r); ok {
		return id, nil
	}
	return c.Sessions.Authenticate(r, clientIP)
}

// snapshotTicket recognises GET /api/v2/channels/{id}/snapshots/{slot}
// with a ticket for that very channel.
func (c Credentials) snapshotTicket(r *http.Request) (*identity.Identity, bool) {
	tok := r.URL.Query().Get("ticket")
	if c.Snapshots == nil || tok == "" || r.Method != http.MethodGet {
		return nil, false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v2/channels/")
	if !ok {
		return nil, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != "snapshots" || parts[2] == "access" || parts[2] == "settings" {
		return nil, false
	}
	if _, err := c.Snapshots(parts[0], tok); err != nil {
		return nil, false
	}
	return &identity.Identity{Kind: identity.KindSnapshotTicket, CredentialID: parts[0], Permissions: []string{"streams.play"}}, true
}

// SessionAuth authenticates the console session cookie and enforces the
// CSRF rules on unsafe methods: the session's CSRF header, and a browser
// context that is same-origin by Sec-Fetch-Site and Origin.
type SessionAuth struct {
	Sessions *session.Service
	// Permissions returns what a set of roles grants now.
	Permissions func(ctx context.Context, roleIDs []string) ([]string, error)
	Proxies     *ProxyTrust
	Revision    func() int64
	InContact   func() bool
	// Fresh: see APITokenAuth.Fresh.
	Fresh func() bool
	Now   func() time.Time
	cache revcache.Cache[resolvedSession]
}

type resolvedSession struct {
	res   *session.Resolved
	perms []string
}

func sessionEnded(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "session_expired", Message: msg, Retryable: retryable(false)}
}

// Authenticate implements Authenticator.
func (a *SessionAuth) Authenticate(r *http.Request, _ net.IP) (*identity.Identity, error) {
	tok := sessionCookie(r, a.Proxies.Secure(r))
	if tok == "" {
		return nil, nil
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	claims, err := a.Sessions.ParseAccess(tok, now)
	if err != nil {
		return nil, sessionEnded("the console session cookie is invalid or expired; refresh or log in again")
	}
	var rs resolvedSession
	if a.InContact != nil && !a.InContact() {
		// As for API tokens: only a session resolved before the cut, at
		// the current revision, is still decided on (marked stale).
		var ok bool
		if rs, ok = a.cached(tok, now); !ok {
			return nil, lostContact()
		}
	} else if rs, err = a.resolve(r.Context(), tok, claims, now); err != nil {
		if errors.Is(err, session.ErrSessionEnded) {
			return nil, sessionEnded("the console session has ended (logged out, revoked, expired, or the user changed); log in again")
		}
		return nil, err
	}
	if unsafeMethod(r.Method) {
		if err := a.checkCSRF(r, claims.SessionID); err != nil {
			return nil, err
		}
	}
	end := rs.res.Session.ExpiresAt
	return &identity.Identity{Kind: identity.KindSession, Subject: rs.res.User.UserID, CredentialID: claims.SessionID, Permissions: rs.perms, ExpiresAt: &end}, nil
}

// cached is the session resolved at the current revision, if any.
func (a *SessionAuth) cached(tok string, now time.Time) (resolvedSession, bool) {
	if a.Revision == nil {
		return resolvedSession{}, false
	}
	e, ok := a.cache.Get(tok, a.Revision())
	return e, ok && now.Before(e.res.Session.ExpiresAt)
}

func (a *SessionAuth) resolve(ctx context.Context, tok string, claims session.AccessClaims, now time.Time) (resolvedSession, error) {
	rev := int64(-1)
	if a.Revision != nil {
		rev = a.Revision()
	}
	if e, ok := a.cache.Get(tok, rev); ok && now.Before(e.res.Session.ExpiresAt) {
		return e, nil
	}
	res, err := a.Sessions.Resolve(ctx, claims, now)
	if err != nil {
		return resolvedSession{}, err
	}
	perms, err := a.Permissions(ctx, res.User.RoleIDs)
	if err != nil {
		return resolvedSession{}, err
	}
	e := resolvedSession{res: res, perms: perms}
	if a.Fresh == nil || a.Fresh() {
		a.cache.Put(tok, rev, e)
	}
	return e, nil
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

func csrfRejected(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: "csrf_rejected", Message: msg, Retryable: retryable(false)}
}

func (a *SessionAuth) checkCSRF(r *http.Request, sessionID string) error {
	if err := a.Proxies.SameOrigin(r); err != nil {
		return err
	}
	h := r.Header.Get(CSRFHeader)
	if h == "" {
		return csrfRejected("state-changing requests of a console session need the " + CSRFHeader + " header")
	}
	if !a.Sessions.CheckCSRF(sessionID, h) {
		return csrfRejected("the " + CSRFHeader + " header does not belong to this session")
	}
	return nil
}

// Cookie names: with TLS the prefixed forms the browser binds to the
// secure origin (and, for __Host-, to this host and path /).
func cookieNames(secure bool) (sessionName, refreshName string) {
	if secure {
		return "__Host-svc_session", "__Secure-svc_refresh"
	}
	return "svc_session", "svc_refresh"
}

func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

func sessionCookie(r *http.Request, secure bool) string {
	name, _ := cookieNames(secure)
	return cookieValue(r, name)
}

// ProxyTrust knows which peers are trusted reverse proxies, whose
// X-Forwarded-Proto and X-Forwarded-Host are believed.
type ProxyTrust struct {
	nets []*net.IPNet
}

// NewProxyTrust parses addresses and CIDRs.
func NewProxyTrust(list []string) (*ProxyTrust, error) {
	p := &ProxyTrust{}
	for _, s := range list {
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
				s += "/32"
			} else {
				s += "/128"
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, err
		}
		p.nets = append(p.nets, n)
	}
	return p, nil
}

func (p *ProxyTrust) trusted(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	return p.Contains(net.ParseIP(host))
}

// Contains reports whether ip is a trusted proxy's address.
func (p *ProxyTrust) Contains(ip net.IP) bool {
	if p == nil || ip == nil {
		return false
	}
	for _, n := range p.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Secure reports whether the client reached us over TLS, directly or
// through a trusted proxy.
func (p *ProxyTrust) Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return p.trusted(r) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (p *ProxyTrust) host(r *http.Request) string {
	if h := r.Header.Get("X-Forwarded-Host"); h != "" && p.trusted(r) {
		return h
	}
	return r.Host
}

// SameOrigin refuses requests a browser made on behalf of another site:
// Sec-Fetch-Site other than same-origin or none (user-initiated), or an
// Origin whose host is not ours. Clients that send neither header (curl, a
// backend) pass; for a console session the CSRF header still binds the
// request to the session.
func (p *ProxyTrust) SameOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return csrfRejected("the browser marked this request " + site + "; console requests must come from the console's own origin")
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if o == "null" || err != nil || u.Host == "" || !strings.EqualFold(u.Host, p.host(r)) {
		return csrfRejected("the request's Origin is not this server's; console requests must come from the console's own origin")
	}
	return nil
}
