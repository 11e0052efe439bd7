package apitoken

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// KeyPrefix holds one record per token, keyed by token id.
const KeyPrefix = "/security/api-tokens/"

// Index declares the typed index the lookup by digest uses.
var Index = sqlitefsm.IndexSpec{Name: "api_tokens", Prefix: KeyPrefix, Columns: []sqlitefsm.IndexColumn{
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
	ErrUnknown    = errors.New("apitoken: unknown token")
	ErrRevoked    = errors.New("apitoken: token revoked")
	ErrExpired    = errors.New("apitoken: token expired")
	ErrNotYet     = errors.New("apitoken: token not yet valid")
	ErrIPNotAllow = errors.New("apitoken: client address not allowed")
)

// Reader is what resolving needs from the store: the local state for the
// index query.
type Reader = sqlitefsm.Reader

// Lookup finds the record of a well-formed token by its digest.
func Lookup(ctx context.Context, r Reader, token string) (*Record, error) {
	if err := Check(token); err != nil {
		return nil, err
	}
	digest := Digest(token)
	var raw []byte
	err := r.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		return tx.QueryRowContext(ctx, `SELECT kv.value FROM idx_api_tokens i JOIN kv ON kv.key = i.key WHERE i.digest = ?`, digest).Scan(&raw)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("apitoken: stored record: %w", err)
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
