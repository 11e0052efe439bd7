package apitoken

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// KeyPrefix holds one record per token, keyed by token id.
const KeyPrefix = "/security/api-tokens/"

// Index declares the typed index the lookup by digest uses.
var Index = query.Index{Name: "api_tokens", Prefix: KeyPrefix, Columns: []query.Column{
	{Name: "digest", Type: "TEXT", Path: "$.digest"},
	{Name: "owner_user_id", Type: "TEXT", Path: "$.ownerUserId"},
	{Name: "revoked_at", Type: "TEXT", Path: "$.revokedAt"},
}}

// Record is the stored token. It holds the token only as a SHA-256 digest
// and, for revealable tokens, as a copy sealed with the cluster key.
type Record struct {
	TokenID     string     `json:"tokenId"`
	Name        string     `json:"name"`
	Purpose     string     `json:"purpose"`
	OwnerUserID string     `json:"ownerUserId"`
	Digest      string     `json:"digest"`
	TokenPrefix string     `json:"tokenPrefix"`
	Permissions []string   `json:"permissions"`
	AllowedIPs  []string   `json:"allowedIps,omitempty"`
	NotBefore   *time.Time `json:"notBefore,omitempty"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	RevokedAt   *time.Time `json:"revokedAt,omitempty"`
	RotatedAt   *time.Time `json:"rotatedAt,omitempty"`
	Revealable  bool       `json:"revealable"`
	Sealed      string     `json:"sealed,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	CreatedBy   string     `json:"createdBy"`
}

// States of a token as the listing shows them.
const (
	StateActive      = "active"
	StateExpired     = "expired"
	StateRevoked     = "revoked"
	StateNotYetValid = "not_yet_valid"
)

// State is the token's state at now.
func (r *Record) State(now time.Time) string {
	switch {
	case r.RevokedAt != nil:
		return StateRevoked
	case r.ExpiresAt != nil && !now.Before(*r.ExpiresAt):
		return StateExpired
	case r.NotBefore != nil && now.Before(*r.NotBefore):
		return StateNotYetValid
	}
	return StateActive
}

// Reasons a presented token is refused; all map to 401 api_token_required.
var (
	ErrUnknown    = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: unknown token")
	ErrRevoked    = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: token revoked")
	ErrExpired    = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: token expired")
	ErrNotYet     = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: token not yet valid")
	ErrIPNotAllow = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: client address not allowed")
)

// Reader is what resolving needs from the store: the local state for the
// index query.
type Reader = query.Reader

// Lookup finds the record of a well-formed token by its digest.
func Lookup(ctx context.Context, r Reader, token string) (*Record, error) {
	if err := Check(token); err != nil {
		return nil, err
	}
	digest := Digest(token)
	rec, found, err := query.First(ctx, r, query.Query{Index: Index.Name, Where: []query.Cond{query.Eq("digest", digest)}}, query.JSON[Record])
	if err != nil {
		return nil, fmt.Errorf("apitoken: stored record: %w", err)
	}
	if !found {
		return nil, ErrUnknown
	}
	return &rec, nil
}

// CheckUsable applies the revocation, time and address rules to a record;
// it runs on every request, cached record or not.
func CheckUsable(rec *Record, clientIP net.IP, now time.Time) error {
	switch {
	case rec.RevokedAt != nil:
		return ErrRevoked
	case rec.ExpiresAt != nil && !now.Before(*rec.ExpiresAt):
		return ErrExpired
	case rec.NotBefore != nil && now.Before(*rec.NotBefore):
		return ErrNotYet
	}
	if len(rec.AllowedIPs) > 0 && !ipAllowed(rec.AllowedIPs, clientIP) {
		return ErrIPNotAllow
	}
	return nil
}

func ipAllowed(cidrs []string, ip net.IP) bool {
	if ip == nil {
		return false
	}
	for _, c := range cidrs {
		if _, n, err := net.ParseCIDR(c); err == nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// Put builds the store operation that writes a record.
func Put(rec Record) (store.Op, error) {
	val, err := json.Marshal(rec)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(KeyPrefix+rec.TokenID, val), nil
}

// Owner is what a token's owning user may do now.
type Owner struct {
	Permissions   []string
	Active, Found bool
}

// OwnerFunc reads a user's current permissions and standing.
type OwnerFunc func(ctx context.Context, userID string) (perms []string, active, found bool, err error)

// ReadOwner reads the owner of rec through read (nil reads nothing: the
// token then stands on its own permissions).
func ReadOwner(ctx context.Context, read OwnerFunc, rec *Record) (Owner, error) {
	if read == nil || rec.OwnerUserID == "" {
		return Owner{}, nil
	}
	perms, active, found, err := read(ctx, rec.OwnerUserID)
	return Owner{Permissions: perms, Active: active, Found: found}, err
}

// Effective is the one rule for what a usable token may do: nothing when
// its owner is disabled or deleted (ok false), otherwise its own
// permissions within what its owner may do now. A token whose owner record
// is gone entirely (a bootstrap token) keeps its own.
func Effective(rec *Record, owner Owner) (perms []string, ok bool) {
	if owner.Found && !owner.Active {
		return nil, false
	}
	if owner.Found {
		return permission.Intersect(rec.Permissions, owner.Permissions), true
	}
	return rec.Permissions, true
}
