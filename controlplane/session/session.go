// Package session owns console login sessions: login with argon2id password
// checks, failed-login counting and the one-time captcha that follows five
// failures, the short-lived access token and the rotating refresh token of
// each session (one session is one refresh-token family, RFC 9700 4.14.2),
// logout, and resolving an access token to the user it acts for. Sessions
// live in the replicated store, so a revocation written on one control node
// is seen by every other before the revoking request returns.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// Store layout.
const (
	SessionsPrefix = "/security/sessions/"
	captchasPrefix = "/security/captchas/"
	failuresPrefix = "/security/login-failures/"
)

// Errors mapped to contract codes at the HTTP boundary.
var (
	// ErrBadCredentials: unknown user, wrong password, or a user that may not
	// log in; deliberately one error so the answer does not reveal which.
	ErrBadCredentials = fault.New(fault.Unauthenticated, "invalid_credentials", "the user name or password is wrong, or the account is disabled")
	// ErrCaptchaRequired: too many recent failures; solve the captcha named
	// by the error's CaptchaID and send its answer with the login.
	ErrCaptchaRequired = fault.New(fault.Unauthenticated, "captcha_required", "too many failed logins: solve the captcha and send captchaId and captchaAnswer")
	// ErrCaptchaWrong: the answer was wrong or the captcha expired or was
	// used; a new one is issued.
	ErrCaptchaWrong = fault.New(fault.Unauthenticated, "captcha_invalid", "the captcha answer is wrong, expired or already used")
	// ErrSessionEnded: the session was revoked, expired, or its user changed.
	ErrSessionEnded = fault.New(fault.Unauthenticated, "session_expired", "the console session has ended; log in again")
	// ErrRefreshReused: an already rotated refresh token was presented; the
	// whole session was revoked.
	ErrRefreshReused = fault.New(fault.Unauthenticated, "refresh_token_reused", "this refresh token was already used; the session has been revoked")
	// ErrMalformed: the token is not one of ours.
	ErrMalformed = fault.New(fault.Unauthenticated, "session_expired", "the session token is malformed")
	// ErrNotFound: no such captcha.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such captcha, or it expired or was used")
	// ErrTooManyFailures: the user's recent failed logins and password
	// checks reached the threshold; password changes wait for the window.
	ErrTooManyFailures = fault.NewRetryable(fault.RateLimited, "rate_limited", "too many wrong passwords for this user recently; try again later")
)

// Audited events of password checks.
const (
	eventLogin          = "security.login"
	eventPasswordChange = "security.password_change"
)

// CaptchaError carries the id of the captcha the caller must solve next.
type CaptchaError struct {
	Err       error
	CaptchaID string
}

func (e *CaptchaError) Error() string { return e.Err.Error() }
func (e *CaptchaError) Unwrap() error { return e.Err }

// Details names the captcha the next login must answer.
func (e *CaptchaError) Details() map[string]string {
	return map[string]string{"captchaId": e.CaptchaID, "captchaRequired": "true"}
}

// Session is one console login: a refresh-token family.
type Session struct {
	SessionID string `json:"sessionId"`
	UserID    string `json:"userId"`
	// UserEpoch is the user's session epoch at login; any change of it (a
	// role or password change, a revocation, deletion) ends the session.
	UserEpoch int64     `json:"userEpoch"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Generation counts refresh rotations; an access token names the
	// generation it was issued at.
	Generation    int64     `json:"generation"`
	RefreshedAt   time.Time `json:"refreshedAt"`
	RefreshDigest string    `json:"refreshDigest"`
	// UsedDigests are rotated refresh tokens of this family; presenting one
	// again revokes the family.
	UsedDigests   []string   `json:"usedDigests,omitempty"`
	ClientAddress string     `json:"clientAddress"`
	UserAgent     string     `json:"userAgent,omitempty"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
	RevokedReason string     `json:"revokedReason,omitempty"`
}

// maxUsedDigests bounds the reuse history of one family; a family that
// refreshes more often than this within its life forgets the oldest.
const maxUsedDigests = 256

// Config holds the lifetimes and thresholds; zero values take defaults.
type Config struct {
	AccessTTL  time.Duration // access token lifetime (default 10 min)
	SessionTTL time.Duration // absolute session lifetime (default 12 h)
	// FailureThreshold failures within FailureWindow for a user name or a
	// client address make the captcha mandatory (default 5 in 15 min).
	FailureThreshold int
	FailureWindow    time.Duration
	CaptchaTTL       time.Duration // default 5 min
}

func (c Config) withDefaults() Config {
	if c.AccessTTL <= 0 {
		c.AccessTTL = 10 * time.Minute
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 5
	}
	if c.FailureWindow <= 0 {
		c.FailureWindow = 15 * time.Minute
	}
	if c.CaptchaTTL <= 0 {
		c.CaptchaTTL = 5 * time.Minute
	}
	return c
}

// Service manages sessions in the replicated store.
type Service struct {
	Store    store.Store
	Accounts *account.Service
	// MACKeys sign access tokens and CSRF tokens, primary first (derived
	// from the cluster keyring, so every control node verifies them).
	MACKeys [][]byte
	// Propagated waits until every reachable control node has applied a
	// revision, so a revocation is effective everywhere when it returns.
	Propagated func(ctx context.Context, revision int64) error
	// Catchup brings this node up to everything the leader has committed
	// (a linearizable barrier). A session opened or refreshed through
	// another node moments ago may not have arrived here yet; a token whose
	// MAC verified but whose session looks unknown or stale is looked up once
	// more after catching up, instead of being refused.
	Catchup func(ctx context.Context) error
	Config  Config
	Now     func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) cfg() Config { return s.Config.withDefaults() }

// retryAfterCatchup runs fn; when it reports ErrSessionEnded and the node
// can catch up with the leader, it runs fn once more.
func (s *Service) retryAfterCatchup(ctx context.Context, fn func() error) error {
	err := fn()
	if !errors.Is(err, ErrSessionEnded) || s.Catchup == nil {
		return err
	}
	if cerr := s.Catchup(ctx); cerr != nil {
		return errors.Join(err, cerr)
	}
	return fn()
}

func (s *Service) propagate(ctx context.Context, rev int64) error {
	if s.Propagated == nil {
		return nil
	}
	return s.Propagated(ctx, rev)
}

// Get reads a session with its mod revision; nil when absent.
func (s *Service) Get(ctx context.Context, id string) (*Session, int64, error) {
	if id == "" || strings.Contains(id, "/") {
		return nil, 0, nil
	}
	kv, _, err := store.Get(ctx, s.Store, SessionsPrefix+id, store.Local)
	if err != nil || kv == nil {
		return nil, 0, err
	}
	sess, err := store.Decode[Session](kv)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: %w", id, err)
	}
	return &sess, kv.ModRevision, nil
}

// Live reports whether the session may still act at t.
func (sess *Session) Live(t time.Time) bool {
	return sess.RevokedAt == nil && t.Before(sess.ExpiresAt)
}

func putSession(sess *Session) (store.Op, error) {
	b, err := json.Marshal(sess)
	return store.Put(SessionsPrefix+sess.SessionID, b), err
}
