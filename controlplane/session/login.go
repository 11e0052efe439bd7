package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// LoginInput is one login attempt.
type LoginInput struct {
	Username, Password       string
	CaptchaID, CaptchaAnswer string
	// RequireCaptcha asks for the captcha even below the failure threshold
	// (the per-user-name rate limit let the login through because of it).
	RequireCaptcha           bool
	ClientAddress, UserAgent string
	TraceID                  string
}

// Issued is what a login or a refresh hands to the client: the access and
// refresh tokens go into HttpOnly cookies, the CSRF token to the console.
type Issued struct {
	Session         *Session
	User            *account.User
	AccessToken     string
	AccessExpiresAt time.Time
	RefreshToken    string
	CSRFToken       string
}

// failures counts recent failed logins for one user name or client address.
type failures struct {
	Count int       `json:"count"`
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
}

func (f failures) active(now time.Time, window time.Duration) int {
	if now.Sub(f.Since) >= window {
		return 0
	}
	return f.Count
}

// failureKeys are the counters of a user name (hashed, so any typed text
// makes a well-formed key) and of a client address.
func failureKeys(username, addr string) (user, client string) {
	sum := sha256.Sum256([]byte(strings.ToLower(username)))
	return failuresPrefix + "user/" + hex.EncodeToString(sum[:16]), failuresPrefix + "addr/" + addr
}

func (s *Service) readFailures(ctx context.Context, key string) (failures, int64, error) {
	kv, _, err := store.Get(ctx, s.Store, key, store.Local)
	if err != nil || kv == nil {
		return failures{}, 0, err
	}
	f, err := store.Decode[failures](kv)
	return f, kv.ModRevision, err
}

// dummyHash is verified when the user does not exist, so an unknown user
// costs as much time as a wrong password and the timing reveals nothing.
var dummyHash, _ = account.HashPassword("not-a-real-password-0123456789")

const maxLoginTxnTries = 4

// Login checks a user's password and opens a session. After
// FailureThreshold recent failures for the user name or the client address,
// a valid, unused captcha answer is required first. Every outcome is
// audited, and counters, captcha consumption, the session and the audit
// record are written in one Txn.
func (s *Service) Login(ctx context.Context, in LoginInput) (*Issued, error) {
	cfg, now := s.cfg(), s.now()
	userKey, addrKey := failureKeys(in.Username, in.ClientAddress)
	uf, _, err := s.readFailures(ctx, userKey)
	if err != nil {
		return nil, err
	}
	af, _, err := s.readFailures(ctx, addrKey)
	if err != nil {
		return nil, err
	}
	actor := audit.Actor{Type: "anonymous", ClientAddress: in.ClientAddress, TraceID: in.TraceID}
	target := in.Username
	if len(target) > 64 {
		target = target[:64]
	}
	fail := func(reason error, captchaCmps []store.Compare, captchaOps []store.Op, userID string) error {
		return s.recordFailure(ctx, in, eventLogin, reason, userID, target, captchaCmps, captchaOps)
	}

	var captchaCmps []store.Compare
	var captchaOps []store.Op
	if in.RequireCaptcha || uf.active(now, cfg.FailureWindow) >= cfg.FailureThreshold || af.active(now, cfg.FailureWindow) >= cfg.FailureThreshold {
		if in.CaptchaID == "" {
			id, err := s.NewCaptcha(ctx, "", in.ClientAddress, actor)
			if err != nil {
				return nil, err
			}
			return nil, &CaptchaError{Err: ErrCaptchaRequired, CaptchaID: id}
		}
		c, rev, err := s.getCaptcha(ctx, in.CaptchaID)
		if err != nil {
			return nil, err
		}
		if c != nil {
			captchaCmps = []store.Compare{store.ModRevisionIs(captchasPrefix+c.CaptchaID, rev)}
			captchaOps = []store.Op{store.Delete(captchasPrefix + c.CaptchaID)}
		}
		if c == nil || !now.Before(c.ExpiresAt) || !s.captchaAnswerOK(in.CaptchaID, in.CaptchaAnswer) {
			return nil, fail(ErrCaptchaWrong, captchaCmps, captchaOps, "")
		}
	}

	u, _, err := s.Accounts.UserByName(ctx, in.Username)
	if err != nil && !errors.Is(err, account.ErrNotFound) {
		return nil, err
	}
	if u == nil {
		account.VerifyPassword(dummyHash, in.Password)
		return nil, fail(ErrBadCredentials, captchaCmps, captchaOps, "")
	}
	if !account.VerifyPassword(u.PasswordHash, in.Password) || u.Status != account.StatusActive {
		return nil, fail(ErrBadCredentials, captchaCmps, captchaOps, u.UserID)
	}
	hash := u.PasswordHash
	for try := 0; try < maxLoginTxnTries; try++ {
		// Re-read the user: the session binds to the epoch it is written
		// with, and the compare below makes sure no password change, role
		// change or revocation slipped in since the check.
		u, rev, err := s.Accounts.User(ctx, u.UserID)
		if err != nil {
			return nil, err
		}
		if u.PasswordHash != hash || u.Status != account.StatusActive {
			return nil, fail(ErrBadCredentials, captchaCmps, captchaOps, u.UserID)
		}
		issued, req, err := s.open(u, in, now)
		if err != nil {
			return nil, err
		}
		rec, err := audit.Op(audit.Record{EventType: eventLogin, Outcome: audit.Success, ActorType: "user", ActorID: u.UserID,
			ClientAddress: in.ClientAddress, TraceID: in.TraceID, Target: target, Message: "session " + issued.Session.SessionID + " opened"})
		if err != nil {
			return nil, err
		}
		u.LastLoginAt = &now
		ub, err := json.Marshal(u)
		if err != nil {
			return nil, err
		}
		req.Compares = append(append(req.Compares, store.ModRevisionIs(account.UsersPrefix+u.UserID, rev)), captchaCmps...)
		req.Then = append(append(req.Then, rec, store.Put(account.UsersPrefix+u.UserID, ub), store.Delete(userKey)), captchaOps...)
		resp, err := s.Store.Txn(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			issued.User = u
			return issued, nil
		}
		if len(captchaCmps) > 0 {
			if c, _, err := s.getCaptcha(ctx, in.CaptchaID); err != nil || c == nil {
				return nil, fail(ErrCaptchaWrong, nil, nil, u.UserID)
			}
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: the user changed repeatedly during login", store.ErrContended)
}

// recordFailure counts a failed attempt (a login, or a password check
// before a password change: event) for the user name and the client
// address, consumes the captcha that was tried, audits the failure, and
// issues the next login captcha once the threshold is reached, all in one
// Txn, retried when a concurrent attempt moved a counter first (so
// parallel guessing is counted too).
func (s *Service) recordFailure(ctx context.Context, in LoginInput, event string, reason error, userID, target string, captchaCmps []store.Compare, captchaOps []store.Op) error {
	cfg, now := s.cfg(), s.now()
	userKey, addrKey := failureKeys(in.Username, in.ClientAddress)
	for try := 0; try < maxLoginTxnTries; try++ {
		uf, ufRev, err := s.readFailures(ctx, userKey)
		if err != nil {
			return err
		}
		af, afRev, err := s.readFailures(ctx, addrKey)
		if err != nil {
			return err
		}
		uf, af = bump(uf, now, cfg.FailureWindow), bump(af, now, cfg.FailureWindow)
		ops := append([]store.Op{}, captchaOps...)
		for _, kf := range []struct {
			key string
			f   failures
		}{{userKey, uf}, {addrKey, af}} {
			b, err := json.Marshal(kf.f)
			if err != nil {
				return err
			}
			ops = append(ops, store.Put(kf.key, b))
		}
		rec, err := audit.Op(audit.Record{EventType: event, Outcome: audit.Failure, ActorType: "user", ActorID: userID,
			ClientAddress: in.ClientAddress, TraceID: in.TraceID, Target: target, Message: reason.Error()})
		if err != nil {
			return err
		}
		ops = append(ops, rec)
		next := ""
		if event == eventLogin && (uf.Count >= cfg.FailureThreshold || af.Count >= cfg.FailureThreshold) {
			id, op, err := s.captchaOp(in.ClientAddress, now)
			if err != nil {
				return err
			}
			next, ops = id, append(ops, op)
		}
		cmps := append([]store.Compare{store.ModRevisionIs(userKey, ufRev), store.ModRevisionIs(addrKey, afRev)}, captchaCmps...)
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: cmps, Then: ops})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			if next != "" {
				return &CaptchaError{Err: reason, CaptchaID: next}
			}
			return reason
		}
		if len(captchaCmps) > 0 {
			if c, _, err := s.getCaptcha(ctx, captchaIDOf(captchaOps)); err == nil && c == nil {
				// A concurrent attempt consumed the captcha first; count
				// this one without it.
				reason, captchaCmps, captchaOps = ErrCaptchaWrong, nil, nil
			}
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return err
		}
	}
	return reason
}

func captchaIDOf(ops []store.Op) string {
	if len(ops) == 0 {
		return ""
	}
	return strings.TrimPrefix(ops[0].Key, captchasPrefix)
}

func bump(f failures, now time.Time, window time.Duration) failures {
	if f.active(now, window) == 0 {
		f = failures{Since: now}
	}
	f.Count++
	f.Last = now
	return f
}

// open builds a new session for u and the Txn that stores it.
func (s *Service) open(u *account.User, in LoginInput, now time.Time) (*Issued, store.TxnRequest, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, store.TxnRequest{}, err
	}
	sess := &Session{SessionID: id.String(), UserID: u.UserID, UserEpoch: u.SessionEpoch, CreatedAt: now,
		ExpiresAt: now.Add(s.cfg().SessionTTL), RefreshedAt: now, ClientAddress: in.ClientAddress, UserAgent: truncate(in.UserAgent, 256)}
	refresh, digest, err := newRefreshToken(sess.SessionID)
	if err != nil {
		return nil, store.TxnRequest{}, err
	}
	sess.RefreshDigest = digest
	put, err := putSession(sess)
	if err != nil {
		return nil, store.TxnRequest{}, err
	}
	issued := s.issue(sess, refresh, now)
	return issued, store.TxnRequest{Compares: []store.Compare{store.Absent(SessionsPrefix + sess.SessionID)}, Then: []store.Op{put}}, nil
}

// issue makes the access token of the session's current generation.
func (s *Service) issue(sess *Session, refresh string, now time.Time) *Issued {
	exp := now.Add(s.cfg().AccessTTL)
	if exp.After(sess.ExpiresAt) {
		exp = sess.ExpiresAt
	}
	return &Issued{Session: sess, AccessToken: s.accessToken(sess.SessionID, sess.Generation, exp), AccessExpiresAt: exp,
		RefreshToken: refresh, CSRFToken: s.CSRFToken(sess.SessionID)}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
