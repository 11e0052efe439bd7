package httpapi

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/permission"
)

// TokenReader is the local state the token lookup queries.
type TokenReader interface {
	ReadTx(ctx context.Context, fn func(tx *sql.Tx, revision int64) error) error
}

// APITokenAuth authenticates `Authorization: Bearer svc_pat_...` against the
// token records in the store. Console sessions join in the security module.
type APITokenAuth struct {
	Reader TokenReader
	Now    func() time.Time
	// Owner returns the current permissions of a token's owning user and
	// whether that user is active; found is false when the owner is not a
	// console user (a token created before users existed, or by svc dev).
	Owner func(ctx context.Context, userID string) (perms []string, active, found bool, err error)
}

// Authenticate implements Authenticator.
func (a APITokenAuth) Authenticate(r *http.Request, clientIP net.IP) (*identity.Identity, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(cred) == "" {
		return nil, &Error{Status: http.StatusUnauthorized, Code: "authentication_required", Message: "use Authorization: Bearer <credential>", Retryable: retryable(false)}
	}
	cred = strings.TrimSpace(cred)
	if !strings.HasPrefix(cred, apitoken.Prefix) {
		return nil, &Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: "the bearer credential is not an API token", Retryable: retryable(false)}
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	rec, err := apitoken.Resolve(r.Context(), a.Reader, cred, clientIP, now())
	if err != nil {
		msg := "the API token is invalid, expired, revoked or not allowed from this address"
		if errors.Is(err, apitoken.ErrMalformed) {
			msg = "the API token is malformed (checksum mismatch)"
		}
		if !errors.Is(err, apitoken.ErrMalformed) && !errors.Is(err, apitoken.ErrUnknown) && !errors.Is(err, apitoken.ErrRevoked) &&
			!errors.Is(err, apitoken.ErrExpired) && !errors.Is(err, apitoken.ErrNotYet) && !errors.Is(err, apitoken.ErrIPNotAllow) {
			return nil, err
		}
		return nil, &Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: msg, Retryable: retryable(false), Err: err}
	}
	perms := rec.Permissions
	if a.Owner != nil && rec.OwnerUserID != "" {
		owner, active, found, err := a.Owner(r.Context(), rec.OwnerUserID)
		if err != nil {
			return nil, err
		}
		if found && !active {
			return nil, &Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: "the API token's owner is disabled or deleted", Retryable: retryable(false)}
		}
		if found {
			// A token never does more than its owner may do now.
			perms = permission.Intersect(perms, owner)
		}
	}
	return &identity.Identity{Kind: identity.KindAPIToken, Subject: rec.OwnerUserID, CredentialID: rec.TokenID, Permissions: perms}, nil
}
