package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/revcache"
)

// TokenReader is the local state the token lookup queries.
type TokenReader = query.Reader

// APITokenAuth authenticates `Authorization: Bearer svc_pat_...` against the
// token records in the store. Console sessions join in the security module.
type APITokenAuth struct {
	Reader TokenReader
	// Revision is the node's applied store revision; when set together with
	// Cache, resolved tokens are cached for as long as it does not move.
	Revision func() int64
	Cache    *AuthCache
	// InContact reports whether the local state is recent enough to decide
	// on credentials; a partitioned node answers 503 instead of trusting a
	// token that may have been revoked on the majority side.
	InContact func() bool
	// Fresh reports whether this node heard from the leader just now;
	// only then is a resolved token cached, so a node cut off from the
	// leader goes on accepting only what it checked while in contact.
	Fresh func() bool
	Now   func() time.Time
	// Owner returns the current permissions of a token's owning user and
	// whether that user is active; found is false when the owner is not a
	// console user (a token created before users existed, or by svc dev).
	Owner apitoken.OwnerFunc
	// Usage notes each use of a token (lastUsedAt), written in batches.
	Usage *apitoken.Usage
}

func tokenRefused(err error) *Error {
	msg := "the API token is invalid, expired, revoked or not allowed from this address"
	if errors.Is(err, apitoken.ErrMalformed) {
		msg = "the API token is malformed (checksum mismatch)"
	}
	return &Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: msg, Retryable: retryable(false), Err: err}
}

func refusal(err error) bool {
	for _, e := range []error{apitoken.ErrMalformed, apitoken.ErrUnknown, apitoken.ErrRevoked, apitoken.ErrExpired, apitoken.ErrNotYet, apitoken.ErrIPNotAllow} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	at := now()
	var entry cachedToken
	var err error
	if a.InContact != nil && !a.InContact() {
		// Cut off from the leader, this node decides only on tokens it
		// resolved before the cut and whose records have not changed
		// since (the answer is marked stale, see staleMark); a token it
		// never saw may have been created or revoked elsewhere.
		var ok bool
		if entry, ok = a.cached(cred); !ok {
			return nil, lostContact()
		}
	} else {
		entry, err = a.resolve(r.Context(), cred)
	}
	if err == nil {
		err = apitoken.CheckUsable(entry.rec, clientIP, at)
	}
	if err != nil {
		if refusal(err) {
			return nil, tokenRefused(err)
		}
		return nil, err
	}
	rec := entry.rec
	perms, ok := apitoken.Effective(rec, entry.owner)
	if !ok {
		return nil, &Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: "the API token's owner is disabled or deleted", Retryable: retryable(false)}
	}
	a.Usage.Touch(rec.TokenID, at)
	return &identity.Identity{Kind: identity.KindAPIToken, Subject: rec.OwnerUserID, CredentialID: rec.TokenID, Permissions: perms, ExpiresAt: rec.ExpiresAt,
		AllowedIPs: rec.AllowedIPs}, nil
}

// lostContact is the answer to a credential this node cannot check
// without the leader.
func lostContact() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
		Message: "this node has lost contact with the cluster leader and cannot check a credential it has not already checked; use another node", Retryable: retryable(true)}
}

// cached is the token's entry resolved at the current revision, if any.
func (a APITokenAuth) cached(token string) (cachedToken, bool) {
	if a.Revision == nil {
		return cachedToken{}, false
	}
	return a.Cache.Get(token, a.Revision())
}

// resolve finds the token's record and its owner's state, from the cache
// while the store revision has not moved.
func (a APITokenAuth) resolve(ctx context.Context, token string) (cachedToken, error) {
	rev := int64(-1)
	if a.Revision != nil {
		rev = a.Revision()
	}
	if e, ok := a.Cache.Get(token, rev); ok {
		return e, nil
	}
	rec, err := apitoken.Lookup(ctx, a.Reader, token)
	if err != nil {
		return cachedToken{}, err
	}
	owner, err := apitoken.ReadOwner(ctx, a.Owner, rec)
	if err != nil {
		return cachedToken{}, err
	}
	e := cachedToken{rec: rec, owner: owner}
	if a.Fresh == nil || a.Fresh() {
		a.Cache.Put(token, rev, e)
	}
	return e, nil
}

// AuthCache remembers resolved API tokens for one store revision.
type AuthCache = revcache.Cache[cachedToken]

type cachedToken struct {
	rec   *apitoken.Record
	owner apitoken.Owner
}
