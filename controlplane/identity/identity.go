// Package identity is who is calling and what they may do: the credential
// kind, the subject, and the permission points the credential carries, with
// the contract's rules for `*` (super permission) and `auth` (any identity).
package identity

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/permission"
)

// Kind is the credential an identity came from.
type Kind string

const (
	KindAPIToken Kind = "api-token"
	KindSession  Kind = "console-session"
	// KindSnapshotTicket is a short-lived ticket that opens one channel's
	// snapshot images and nothing else.
	KindSnapshotTicket Kind = "snapshot-ticket"
)

// Identity is an authenticated caller.
type Identity struct {
	Kind         Kind
	Subject      string // user id
	CredentialID string // token id or session id
	Permissions  []string
	// ExpiresAt is when the credential stops working, if it has an end
	// (an API token's expiry); grants made with it never outlive it.
	ExpiresAt *time.Time
	// AllowedIPs are the address ranges an API token is limited to (empty:
	// any); tokens it creates are limited to them too.
	AllowedIPs []string
}

// Has reports whether the identity holds permission p, by the catalogue's
// rule (`*` holds everything, `auth` is held by every identity).
func (id *Identity) Has(p string) bool {
	return id != nil && permission.Grants(id.Permissions, p)
}

type ctxKey struct{}

// With stores id in ctx.
func With(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the identity in ctx, or nil for an anonymous caller.
func From(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}
