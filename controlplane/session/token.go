package session

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Token prefixes: distinct from API tokens (svc_pat_), so a console token
// sent as an API token is recognised and refused, and secret scanners can
// tell them apart.
const (
	AccessPrefix  = "svc_sat_"
	RefreshPrefix = "svc_srt_"
)

var b64 = base64.RawURLEncoding.Strict()

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join(parts, "|")))
	return m.Sum(nil)
}

// accessToken is svc_sat_<sessionId>.<generation>.<expiry unix>.<mac>: it
// is verified without a lookup (MAC, expiry), then the session record
// decides whether it still counts.
func (s *Service) accessToken(sessionID string, gen int64, exp time.Time) string {
	g, e := strconv.FormatInt(gen, 10), strconv.FormatInt(exp.Unix(), 10)
	return AccessPrefix + sessionID + "." + g + "." + e + "." + b64.EncodeToString(mac(s.MACKeys[0], "access", sessionID, g, e))
}

// AccessClaims is what a verified access token says.
type AccessClaims struct {
	SessionID  string
	Generation int64
	ExpiresAt  time.Time
}

// ParseAccess verifies an access token's MAC and expiry.
func (s *Service) ParseAccess(tok string, now time.Time) (AccessClaims, error) {
	rest, ok := strings.CutPrefix(tok, AccessPrefix)
	if !ok || len(tok) > 256 {
		return AccessClaims{}, ErrMalformed
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return AccessClaims{}, ErrMalformed
	}
	got, err := b64.DecodeString(parts[3])
	if err != nil {
		return AccessClaims{}, ErrMalformed
	}
	valid := false
	for _, k := range s.MACKeys {
		if hmac.Equal(got, mac(k, "access", parts[0], parts[1], parts[2])) {
			valid = true
			break
		}
	}
	if !valid {
		return AccessClaims{}, ErrMalformed
	}
	gen, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return AccessClaims{}, ErrMalformed
	}
	c := AccessClaims{SessionID: parts[0], Generation: gen, ExpiresAt: time.Unix(exp, 0).UTC()}
	if !now.Before(c.ExpiresAt) {
		return c, ErrSessionEnded
	}
	return c, nil
}

// CSRFToken is bound to the session: an HMAC of its id, stable across
// refreshes, so the console keeps one value for the session's life.
func (s *Service) CSRFToken(sessionID string) string {
	return b64.EncodeToString(mac(s.MACKeys[0], "csrf", sessionID))
}

// CheckCSRF compares a presented CSRF token with the session's, accepting
// values made under any key of the ring.
func (s *Service) CheckCSRF(sessionID, presented string) bool {
	got, err := b64.DecodeString(presented)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	for _, k := range s.MACKeys {
		if hmac.Equal(got, mac(k, "csrf", sessionID)) {
			return true
		}
	}
	return false
}

// newRefreshToken returns svc_srt_<sessionId>.<256 random bits> and the
// digest that is stored in its place.
func newRefreshToken(sessionID string) (token, digest string, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	token = RefreshPrefix + sessionID + "." + b64.EncodeToString(raw)
	return token, digestOf(token), nil
}

func digestOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// parseRefresh returns the session id a refresh token names.
func parseRefresh(tok string) (string, error) {
	rest, ok := strings.CutPrefix(tok, RefreshPrefix)
	if !ok || len(tok) > 256 {
		return "", ErrMalformed
	}
	id, secret, ok := strings.Cut(rest, ".")
	if !ok || id == "" || len(secret) != 43 {
		return "", ErrMalformed
	}
	if _, err := b64.DecodeString(secret); err != nil {
		return "", ErrMalformed
	}
	return id, nil
}

// RefreshSessionID returns the session a refresh token claims to belong to,
// so the caller can check the session-bound CSRF token before the refresh.
func RefreshSessionID(tok string) (string, error) { return parseRefresh(tok) }
