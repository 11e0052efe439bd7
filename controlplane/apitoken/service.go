package apitoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Errors of the token service, mapped to contract codes at the boundary.
var (
	ErrInvalid         = fault.New(fault.Invalid, "invalid_body", "invalid token request")
	ErrNotFound        = fault.New(fault.NotFound, "not_found", "no such API token")
	ErrNotRevealable   = fault.New(fault.Conflict, "token_not_revealable", "token cannot be revealed")
	ErrRevokedConflict = fault.New(fault.Conflict, "conflict", "token is revoked")
	ErrBeyondCreator   = fault.New(fault.Forbidden, "permission_denied", "requested permissions exceed the creator's")
)

// Actor is who asks for a change, for the permission ceiling and the audit.
type Actor struct {
	audit.Actor
	UserID      string
	Permissions []string
	// Token is set when the actor is an API token: what it creates or
	// changes stays within its own expiry and address ranges.
	Token *Limits
}

// Limits are an API token's validity end and address ranges.
type Limits struct {
	ExpiresAt  *time.Time
	AllowedIPs []string
}

// isSelf reports whether the actor is the token id itself.
func (a Actor) isSelf(id string) bool { return a.Token != nil && a.ID == id }

// Service manages tokens in the replicated store.
type Service struct {
	Store  store.Store
	Reader Reader
	Keys   *keyring.Keyring
	// Propagated waits until every reachable control node has applied a
	// revision, so a revocation is in force everywhere when it returns.
	Propagated func(ctx context.Context, revision int64) error
	Now        func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Input is what create and update accept; nil fields are not changed on
// update.
type Input struct {
	Name, Purpose *string
	Permissions   *[]string
	AllowedIPs    *[]string
	NotBefore     *time.Time
	ExpiresAt     *time.Time
	Revealable    bool
}

func (s *Service) validate(actor Actor, r *Record) error {
	if n := len(strings.TrimSpace(r.Name)); n == 0 || len(r.Name) > 128 {
		return fmt.Errorf("%w: name must be 1-128 characters", ErrInvalid)
	}
	if len(r.Purpose) > 512 {
		return fmt.Errorf("%w: purpose must be at most 512 characters", ErrInvalid)
	}
	if len(r.Permissions) == 0 {
		return fmt.Errorf("%w: at least one permission is required", ErrInvalid)
	}
	for _, p := range r.Permissions {
		if !permission.Known(p) {
			return fmt.Errorf("%w: unknown permission %q", ErrInvalid, p)
		}
	}
	if missing, ok := permission.Within(actor.Permissions, r.Permissions); !ok {
		return fmt.Errorf("%w: you do not hold %q", ErrBeyondCreator, missing)
	}
	if len(r.AllowedIPs) > 64 {
		return fmt.Errorf("%w: at most 64 allowed address ranges", ErrInvalid)
	}
	for i, c := range r.AllowedIPs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return fmt.Errorf("%w: allowedIps[%d] %q is not a CIDR", ErrInvalid, i, c)
		}
		r.AllowedIPs[i] = n.String()
	}
	if r.NotBefore != nil && r.ExpiresAt != nil && !r.NotBefore.Before(*r.ExpiresAt) {
		return fmt.Errorf("%w: notBefore must be before expiresAt", ErrInvalid)
	}
	if r.ExpiresAt != nil && !r.ExpiresAt.After(s.now()) && r.RevokedAt == nil {
		return fmt.Errorf("%w: expiresAt is in the past", ErrInvalid)
	}
	return withinLimits(actor.Token, r)
}

// withinLimits keeps what a token creates or changes inside the token's
// own limits: it expires no later, and is used only from addresses the
// token may be used from. Without this a token could mint a child free of
// its own expiry and allow-list.
func withinLimits(l *Limits, r *Record) error {
	if l == nil {
		return nil
	}
	if l.ExpiresAt != nil && (r.ExpiresAt == nil || r.ExpiresAt.After(*l.ExpiresAt)) {
		return fmt.Errorf("%w: expiresAt must be at most %s, the expiry of the token you use", ErrBeyondCreator, l.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if len(l.AllowedIPs) == 0 {
		return nil
	}
	if len(r.AllowedIPs) == 0 {
		return fmt.Errorf("%w: allowedIps must be within the address ranges of the token you use (%s)", ErrBeyondCreator, strings.Join(l.AllowedIPs, ", "))
	}
	for _, c := range r.AllowedIPs {
		if !cidrWithin(c, l.AllowedIPs) {
			return fmt.Errorf("%w: allowedIps %q is not within the address ranges of the token you use (%s)", ErrBeyondCreator, c, strings.Join(l.AllowedIPs, ", "))
		}
	}
	return nil
}

// cidrWithin reports whether range c lies inside one of parents.
func cidrWithin(c string, parents []string) bool {
	_, child, err := net.ParseCIDR(c)
	if err != nil {
		return false
	}
	cones, cbits := child.Mask.Size()
	for _, p := range parents {
		_, parent, err := net.ParseCIDR(p)
		if err != nil {
			continue
		}
		pones, pbits := parent.Mask.Size()
		if pbits == cbits && pones <= cones && parent.Contains(child.IP) {
			return true
		}
	}
	return false
}

func (s *Service) mint(r *Record) (string, error) {
	tok, err := New()
	if err != nil {
		return "", err
	}
	r.Digest, r.TokenPrefix, r.Sealed = Digest(tok), tok[:12], ""
	if r.Revealable {
		if r.Sealed, err = s.Keys.Seal([]byte(tok), []byte(KeyPrefix+r.TokenID)); err != nil {
			return "", err
		}
	}
	return tok, nil
}

// Create stores a new token and returns it with its value, shown once.
func (s *Service) Create(ctx context.Context, actor Actor, in Input) (*Record, string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	r := &Record{TokenID: id.String(), OwnerUserID: actor.UserID, CreatedAt: s.now(), CreatedBy: actor.Type + ":" + actor.ID,
		NotBefore: in.NotBefore, ExpiresAt: in.ExpiresAt, Revealable: in.Revealable}
	if in.Name != nil {
		r.Name = *in.Name
	}
	if in.Purpose != nil {
		r.Purpose = *in.Purpose
	}
	if in.Permissions != nil {
		r.Permissions = permission.Normalize(*in.Permissions)
	}
	if in.AllowedIPs != nil {
		r.AllowedIPs = append([]string(nil), *in.AllowedIPs...)
	}
	if l := actor.Token; l != nil {
		// A token's child inherits the limits it does not name; naming
		// wider ones is refused (withinLimits).
		if r.ExpiresAt == nil {
			r.ExpiresAt = l.ExpiresAt
		}
		if len(r.AllowedIPs) == 0 {
			r.AllowedIPs = append([]string(nil), l.AllowedIPs...)
		}
	}
	if err := s.validate(actor, r); err != nil {
		return nil, "", err
	}
	tok, err := s.mint(r)
	if err != nil {
		return nil, "", err
	}
	put, err := Put(*r)
	if err != nil {
		return nil, "", err
	}
	aud, err := actor.Success("security.token.created", r.TokenID, fmt.Sprintf("token %q with %d permission(s)", r.Name, len(r.Permissions)))
	if err != nil {
		return nil, "", err
	}
	key := KeyPrefix + r.TokenID
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(key)}, Then: []store.Op{put, aud}})
	if err != nil {
		return nil, "", err
	}
	if !resp.Succeeded {
		return nil, "", fmt.Errorf("%w: token id collision", ErrInvalid)
	}
	// A backend may use the new token on any control node right away.
	return r, tok, s.propagate(ctx, resp.Header.Revision)
}

// get reads a record with its mod revision.
func (s *Service) get(ctx context.Context, id string) (*Record, int64, error) {
	kv, _, err := store.Get(ctx, s.Store, KeyPrefix+id, store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil || strings.Contains(id, "/") {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	r, err := store.Decode[Record](kv)
	if err != nil {
		return nil, 0, err
	}
	return &r, kv.ModRevision, nil
}

// change applies fn to the current record and writes it with its audit
// record through store.Update, which retries when another writer got there
// first.
func (s *Service) change(ctx context.Context, actor Actor, id, event string, fn func(r *Record) (string, error)) (*Record, int64, error) {
	if strings.Contains(id, "/") {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	var r *Record
	resp, err := store.Update(ctx, s.Store, KeyPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		cur, err := store.Decode[Record](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		r = &cur
		msg, err := fn(r)
		if err != nil {
			return nil, nil, nil, err
		}
		val, err := json.Marshal(r)
		if err != nil {
			return nil, nil, nil, err
		}
		aud, err := actor.Success(event, id, msg)
		return val, []store.Op{aud}, nil, err
	})
	if errors.Is(err, store.ErrContended) {
		return nil, 0, fmt.Errorf("%w: %w", ErrRevokedConflict, err)
	}
	if err != nil {
		return nil, 0, err
	}
	return r, resp.Header.Revision, nil
}

// Update changes the given fields of an active token.
func (s *Service) Update(ctx context.Context, actor Actor, id string, in Input) (*Record, error) {
	if actor.isSelf(id) {
		return nil, fmt.Errorf("%w: a token cannot change itself; use another credential", ErrBeyondCreator)
	}
	r, rev, err := s.change(ctx, actor, id, "security.token.updated", func(r *Record) (string, error) {
		if r.RevokedAt != nil {
			return "", fmt.Errorf("%w: a revoked token cannot be changed", ErrRevokedConflict)
		}
		var changed []string
		if in.Name != nil {
			r.Name, changed = *in.Name, append(changed, "name")
		}
		if in.Purpose != nil {
			r.Purpose, changed = *in.Purpose, append(changed, "purpose")
		}
		if in.Permissions != nil {
			r.Permissions, changed = permission.Normalize(*in.Permissions), append(changed, "permissions")
		}
		if in.AllowedIPs != nil {
			r.AllowedIPs, changed = append([]string(nil), *in.AllowedIPs...), append(changed, "allowedIps")
		}
		if in.NotBefore != nil {
			r.NotBefore, changed = in.NotBefore, append(changed, "notBefore")
		}
		if in.ExpiresAt != nil {
			r.ExpiresAt, changed = in.ExpiresAt, append(changed, "expiresAt")
		}
		return "changed " + strings.Join(changed, ", "), s.validate(actor, r)
	})
	if err != nil {
		return nil, err
	}
	// Narrowed permissions or addresses must hold everywhere at once.
	return r, s.propagate(ctx, rev)
}

func (s *Service) propagate(ctx context.Context, rev int64) error {
	if s.Propagated == nil {
		return nil
	}
	return s.Propagated(ctx, rev)
}

// Revoke ends a token on every control node before it returns.
func (s *Service) Revoke(ctx context.Context, actor Actor, id string) (*Record, error) {
	r, rev, err := s.change(ctx, actor, id, "security.token.revoked", func(r *Record) (string, error) {
		if err := mayTouch(actor, r, "revoking"); err != nil {
			return "", err
		}
		if r.RevokedAt == nil {
			now := s.now()
			r.RevokedAt, r.Sealed = &now, ""
		}
		return "revoked", nil
	})
	if err != nil {
		return nil, err
	}
	return r, s.propagate(ctx, rev)
}

// Rotate replaces the token's value; the old value stops working at once.
func (s *Service) Rotate(ctx context.Context, actor Actor, id string) (*Record, string, error) {
	var tok string
	r, rev, err := s.change(ctx, actor, id, "security.token.rotated", func(r *Record) (string, error) {
		if r.RevokedAt != nil {
			return "", fmt.Errorf("%w: a revoked token cannot be rotated", ErrRevokedConflict)
		}
		if _, ok := permission.Within(actor.Permissions, r.Permissions); !ok {
			return "", fmt.Errorf("%w: rotating hands out the token's permissions again", ErrBeyondCreator)
		}
		if err := mayTouch(actor, r, "rotating"); err != nil {
			return "", err
		}
		now := s.now()
		r.RotatedAt = &now
		var err error
		tok, err = s.mint(r)
		return "rotated", err
	})
	if err != nil {
		return nil, "", err
	}
	return r, tok, s.propagate(ctx, rev)
}

// mayTouch refuses revealing, rotating or revoking another user's token
// to a caller that does not hold all of its permissions (a `*` token is
// touched only by a holder of `*`).
func mayTouch(actor Actor, r *Record, what string) error {
	if r.OwnerUserID != actor.UserID || actor.UserID == "" {
		if missing, ok := permission.Within(actor.Permissions, r.Permissions); !ok {
			return fmt.Errorf("%w: %s another user's token needs every permission it carries; you do not hold %q", ErrBeyondCreator, what, missing)
		}
	}
	return nil
}

// Reveal shows a revealable token again and records that it did.
func (s *Service) Reveal(ctx context.Context, actor Actor, id string) (string, error) {
	r, _, err := s.get(ctx, id)
	if err != nil {
		return "", err
	}
	if !r.Revealable || r.Sealed == "" || r.RevokedAt != nil {
		return "", fmt.Errorf("%w: it was not created revealable, or it is revoked", ErrNotRevealable)
	}
	if _, ok := permission.Within(actor.Permissions, r.Permissions); !ok {
		return "", fmt.Errorf("%w: revealing hands out the token's permissions", ErrBeyondCreator)
	}
	if err := mayTouch(actor, r, "revealing"); err != nil {
		return "", err
	}
	tok, err := s.Keys.Open(r.Sealed, []byte(KeyPrefix+r.TokenID))
	if err != nil {
		return "", err
	}
	aud, err := actor.Success("security.token.revealed", id, "revealed")
	if err != nil {
		return "", err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{aud}}); err != nil {
		return "", err
	}
	return string(tok), nil
}

// List returns one page of tokens, newest first.
func (s *Service) List(ctx context.Context, owner string, includeRevoked bool, page, size int) ([]Record, int64, error) {
	var where query.Where
	where.EqIfSet("owner_user_id", owner)
	if !includeRevoked {
		where.Add(query.IsNull("revoked_at"))
	}
	return query.Page(ctx, s.Reader, query.Query{Index: Index.Name, Where: where, Order: []query.Order{query.Desc(query.Key)}},
		page, size, query.JSON[Record])
}

// Get reads one token record.
func (s *Service) Get(ctx context.Context, id string) (*Record, error) {
	r, _, err := s.get(ctx, id)
	return r, err
}
