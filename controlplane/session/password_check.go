package session

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
)

// PasswordCheck is the current password a user gives to change their own
// password, with where the request came from.
type PasswordCheck struct {
	User                   *account.User
	Current                string
	ClientAddress, TraceID string
}

// CheckCurrentPassword verifies the current password before a user's own
// password change. It shares the login failure counters (per user name and
// per client address), so a stolen session cannot guess the password by
// trying changes: a wrong password counts and is audited as a failure, and
// once the user's or the address's recent failures reach the threshold no
// change is tried until the window has passed (ErrTooManyFailures, with
// how long to wait).
func (s *Service) CheckCurrentPassword(ctx context.Context, in PasswordCheck) (time.Duration, error) {
	cfg, now := s.cfg(), s.now()
	userKey, addrKey := failureKeys(in.User.Username, in.ClientAddress)
	for _, key := range []string{userKey, addrKey} {
		f, _, err := s.readFailures(ctx, key)
		if err != nil {
			return 0, err
		}
		if f.active(now, cfg.FailureWindow) >= cfg.FailureThreshold {
			return f.Since.Add(cfg.FailureWindow).Sub(now), ErrTooManyFailures
		}
	}
	if account.VerifyPassword(in.User.PasswordHash, in.Current) {
		return 0, nil
	}
	login := LoginInput{Username: in.User.Username, ClientAddress: in.ClientAddress, TraceID: in.TraceID}
	return 0, s.recordFailure(ctx, login, eventPasswordChange, ErrBadCredentials, in.User.UserID, in.User.Username, nil, nil)
}
