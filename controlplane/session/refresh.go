package session

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// Refresh rotates a refresh token: the presented token must be the
// family's current one; it is replaced by a new one and a new access token
// is issued. Presenting a token the family already rotated away means it
// leaked (or a client raced itself): the whole family is revoked at once,
// as RFC 9700 section 4.14.2 asks.
func (s *Service) Refresh(ctx context.Context, token string, actor audit.Actor) (*Issued, error) {
	var out *Issued
	err := s.retryAfterCatchup(ctx, func() (err error) {
		out, err = s.refresh(ctx, token, actor)
		return err
	})
	return out, err
}

func (s *Service) refresh(ctx context.Context, token string, actor audit.Actor) (*Issued, error) {
	id, err := parseRefresh(token)
	if err != nil {
		return nil, err
	}
	digest := digestOf(token)
	for try := 0; try < maxLoginTxnTries; try++ {
		now := s.now()
		sess, rev, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if sess == nil || !sess.Live(now) {
			return nil, ErrSessionEnded
		}
		if subtle.ConstantTimeCompare([]byte(digest), []byte(sess.RefreshDigest)) != 1 {
			for _, used := range sess.UsedDigests {
				if subtle.ConstantTimeCompare([]byte(digest), []byte(used)) == 1 {
					if err := s.revoke(ctx, id, "refresh_token_reuse", actor, audit.Denied); err != nil {
						return nil, err
					}
					return nil, ErrRefreshReused
				}
			}
			return nil, ErrSessionEnded
		}
		u, _, err := s.Accounts.User(ctx, sess.UserID)
		if err != nil && !errors.Is(err, account.ErrNotFound) {
			return nil, err
		}
		if u == nil || u.Status != account.StatusActive || u.SessionEpoch != sess.UserEpoch {
			return nil, ErrSessionEnded
		}
		next, nextDigest, err := newRefreshToken(id)
		if err != nil {
			return nil, err
		}
		sess.UsedDigests = append(sess.UsedDigests, sess.RefreshDigest)
		if len(sess.UsedDigests) > maxUsedDigests {
			sess.UsedDigests = sess.UsedDigests[len(sess.UsedDigests)-maxUsedDigests:]
		}
		sess.RefreshDigest, sess.Generation, sess.RefreshedAt = nextDigest, sess.Generation+1, now
		put, err := putSession(sess)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(SessionsPrefix+id, rev)}, Then: []store.Op{put}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			issued := s.issue(sess, next, now)
			issued.User = u
			return issued, nil
		}
		// Someone else changed the session first: another refresh with the
		// same token (then the next round sees it as used), or a revocation.
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: session %s", store.ErrContended, id)
}

// Logout revokes one session.
func (s *Service) Logout(ctx context.Context, sessionID string, actor audit.Actor) error {
	return s.revoke(ctx, sessionID, "logout", actor, audit.Success)
}

// revoke marks a session revoked with its audit record and waits until
// every reachable control node has applied it.
func (s *Service) revoke(ctx context.Context, id, reason string, actor audit.Actor, outcome string) error {
	var sess Session
	resp, err := store.Update(ctx, s.Store, SessionsPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, ErrSessionEnded
		}
		cur, err := store.Decode[Session](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		sess = cur
		if sess.RevokedAt == nil {
			t := s.now()
			sess.RevokedAt, sess.RevokedReason = &t, reason
		}
		b, err := json.Marshal(&sess)
		if err != nil {
			return nil, nil, nil, err
		}
		rec, err := audit.Op(audit.Record{EventType: "security.session.revoked", Outcome: outcome, ActorType: actor.Type, ActorID: actor.ID,
			ClientAddress: actor.ClientAddress, TraceID: actor.TraceID, Target: "session " + id + " of user " + sess.UserID, Message: reason})
		return b, []store.Op{rec}, nil, err
	})
	if err != nil {
		return err
	}
	return s.propagate(ctx, resp.Header.Revision)
}

// Resolved is a live session and its user, as an access token presents
// them.
type Resolved struct {
	Session *Session
	User    *account.User
}

// Resolve turns a verified access token into its live session and user.
// The access token of the current generation and of the one before count
// (a request sent just before a refresh still passes); older ones do not.
func (s *Service) Resolve(ctx context.Context, c AccessClaims, now time.Time) (*Resolved, error) {
	var out *Resolved
	err := s.retryAfterCatchup(ctx, func() (err error) {
		out, err = s.resolve(ctx, c, now)
		return err
	})
	return out, err
}

func (s *Service) resolve(ctx context.Context, c AccessClaims, now time.Time) (*Resolved, error) {
	r, err := s.Standing(ctx, c.SessionID, now)
	if err != nil {
		return nil, err
	}
	if c.Generation < r.Session.Generation-1 || c.Generation > r.Session.Generation {
		return nil, ErrSessionEnded
	}
	return r, nil
}

// Standing is a session's state now, for what was granted through it (a
// playback lease of the console's live view): its live session and active
// user, or ErrSessionEnded once it was logged out, revoked or expired, or
// its user changed.
func (s *Service) Standing(ctx context.Context, sessionID string, now time.Time) (*Resolved, error) {
	sess, _, err := s.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if sess == nil || !sess.Live(now) {
		return nil, ErrSessionEnded
	}
	u, _, err := s.Accounts.User(ctx, sess.UserID)
	if err != nil {
		if errors.Is(err, account.ErrNotFound) {
			return nil, ErrSessionEnded
		}
		return nil, err
	}
	if u.Status != account.StatusActive || u.SessionEpoch != sess.UserEpoch {
		return nil, ErrSessionEnded
	}
	return &Resolved{Session: sess, User: u}, nil
}

// Cleanup deletes sessions, captchas and failure counters that can no
// longer matter: sessions a day after they ended, expired captchas, and
// counters whose window has passed. It runs on the leader.
func (s *Service) Cleanup(ctx context.Context) (int, error) {
	cfg, now := s.cfg(), s.now()
	removed := 0
	sweep := func(prefix string, dead func(raw []byte) bool) error {
		resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix)})
		if err != nil {
			return err
		}
		for _, kv := range resp.KVs {
			if !dead(kv.Value) {
				continue
			}
			r, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{store.Delete(kv.Key)}})
			if err != nil {
				return err
			}
			if r.Succeeded {
				removed++
			}
		}
		return nil
	}
	err := errors.Join(
		sweep(SessionsPrefix, func(raw []byte) bool {
			var v Session
			if json.Unmarshal(raw, &v) != nil {
				return false
			}
			end := v.ExpiresAt
			if v.RevokedAt != nil && v.RevokedAt.Before(end) {
				end = *v.RevokedAt
			}
			return now.Sub(end) > 24*time.Hour
		}),
		sweep(captchasPrefix, func(raw []byte) bool {
			var v Captcha
			return json.Unmarshal(raw, &v) == nil && now.After(v.ExpiresAt)
		}),
		sweep(failuresPrefix, func(raw []byte) bool {
			var v failures
			return json.Unmarshal(raw, &v) == nil && v.active(now, cfg.FailureWindow) == 0
		}),
	)
	return removed, err
}
