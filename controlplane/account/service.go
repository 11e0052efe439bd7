package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Store layout.
const (
	UsersPrefix     = "/security/users/"
	usernamesPrefix = "/security/usernames/"
	RolesPrefix     = "/security/roles/"
	rolenamesPrefix = "/security/rolenames/"
	bootstrapKey    = "/security/bootstrap"
)

// Index declares the users index table.
var Index = query.Index{Name: "users", Prefix: UsersPrefix, Columns: []query.Column{
	{Name: "username", Type: "TEXT", Path: "$.username"},
	{Name: "display_name", Type: "TEXT", Path: "$.displayName"},
	{Name: "status", Type: "TEXT", Path: "$.status"},
}}

// User statuses.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
	StatusDeleted  = "deleted"
)

// Errors mapped to contract codes at the boundary.
var (
	ErrInvalid       = fault.New(fault.Invalid, "invalid_body", "invalid request")
	ErrNotFound      = fault.New(fault.NotFound, "not_found", "not found")
	ErrConflict      = fault.New(fault.Conflict, "conflict", "conflict")
	ErrBeyondGranter = fault.New(fault.Forbidden, "permission_denied", "grants permissions the caller does not hold")
	ErrBootstrapped  = fault.New(fault.Conflict, "conflict", "an administrator already exists")
)

// User is the stored user. PasswordHash never leaves this package's callers
// through the API.
type User struct {
	UserID            string     `json:"userId"`
	Username          string     `json:"username"`
	DisplayName       string     `json:"displayName"`
	Status            string     `json:"status"`
	RoleIDs           []string   `json:"roleIds"`
	PasswordHash      string     `json:"passwordHash"`
	SessionEpoch      int64      `json:"sessionEpoch"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	LastLoginAt       *time.Time `json:"lastLoginAt,omitempty"`
	PasswordChangedAt *time.Time `json:"passwordChangedAt,omitempty"`
}

// StoredRole is a custom role with timestamps.
type StoredRole struct {
	Role
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Actor is who asks, for the grant ceiling and the audit.
type Actor struct {
	audit.Actor
	Permissions []string
}

// Service manages users and roles in the replicated store.
type Service struct {
	Store      store.Store
	Reader     apitoken.Reader
	Propagated func(ctx context.Context, revision int64) error
}

var usernameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{2,63}$`)

func now() time.Time { return time.Now().UTC() }

func putJSON(key string, v any) (store.Op, error) {
	b, err := json.Marshal(v)
	return store.Put(key, b), err
}

func (s *Service) propagate(ctx context.Context, rev int64) error {
	if s.Propagated == nil {
		return nil
	}
	return s.Propagated(ctx, rev)
}

// UserQuery filters the user listing.
type UserQuery struct {
	Keyword, Status string
	IncludeDeleted  bool
	Page, PageSize  int
}

// Users lists users by name.
func (s *Service) Users(ctx context.Context, q UserQuery) ([]User, int64, error) {
	var where query.Where
	if q.Keyword != "" {
		where.Add(query.AnyOf(query.Contains("username", q.Keyword), query.Contains("display_name", q.Keyword)))
	}
	if q.Status != "" {
		where.Add(query.Eq("status", q.Status))
	} else if !q.IncludeDeleted {
		where.Add(query.Ne("status", "deleted"))
	}
	return query.Page(ctx, s.Reader, query.Query{Index: Index.Name, Where: where, Order: []query.Order{query.Asc("username")}},
		q.Page, q.PageSize, query.JSON[User])
}

// User reads one user with its mod revision.
func (s *Service) User(ctx context.Context, id string) (*User, int64, error) {
	kv, _, err := store.Get(ctx, s.Store, UsersPrefix+id, store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil || strings.Contains(id, "/") {
		return nil, 0, fmt.Errorf("%w: user %q", ErrNotFound, id)
	}
	u, err := store.Decode[User](kv)
	return &u, kv.ModRevision, err
}

// rolesGuard checks the roles exist and grant nothing beyond the actor, and
// returns ops that touch each custom role (see DeleteRole) with compares.
func (s *Service) rolesGuard(ctx context.Context, a Actor, roleIDs []string) ([]store.Compare, []store.Op, error) {
	if len(roleIDs) == 0 {
		return nil, nil, fmt.Errorf("%w: at least one role is required", ErrInvalid)
	}
	var cmps []store.Compare
	var ops []store.Op
	var perms []string
	for _, id := range roleIDs {
		r, rev, err := s.Role(ctx, id)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, nil, fmt.Errorf("%w: no role %q", ErrInvalid, id)
			}
			return nil, nil, err
		}
		perms = append(perms, r.Permissions...)
		if !r.BuiltIn {
			put, err := putJSON(RolesPrefix+id, r)
			if err != nil {
				return nil, nil, err
			}
			cmps = append(cmps, store.ModRevisionIs(RolesPrefix+id, rev))
			ops = append(ops, put)
		}
	}
	if missing, ok := permission.Within(a.Permissions, perms); !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrBeyondGranter, missing)
	}
	return cmps, ops, nil
}

func uniq(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// CreateUser stores a user with a unique name.
func (s *Service) CreateUser(ctx context.Context, a Actor, username, password, displayName, status string, roleIDs []string) (*User, error) {
	return s.createUser(ctx, a, username, password, displayName, status, roleIDs, nil)
}

func (s *Service) createUser(ctx context.Context, a Actor, username, password, displayName, status string, roleIDs []string, extra *store.Compare) (*User, error) {
	if !usernameRe.MatchString(username) {
		return nil, fmt.Errorf("%w: user name must match %s", ErrInvalid, usernameRe)
	}
	if len(displayName) > 128 {
		return nil, fmt.Errorf("%w: display name must be at most 128 characters", ErrInvalid)
	}
	if status == "" {
		status = StatusActive
	}
	if status != StatusActive && status != StatusDisabled {
		return nil, fmt.Errorf("%w: status must be active or disabled", ErrInvalid)
	}
	if err := CheckPassword(username, password); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	roleIDs = uniq(roleIDs)
	cmps, touch, err := s.rolesGuard(ctx, a, roleIDs)
	if err != nil {
		return nil, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	id, _ := uuid.NewV7()
	t := now()
	u := &User{UserID: id.String(), Username: username, DisplayName: displayName, Status: status, RoleIDs: roleIDs,
		PasswordHash: hash, CreatedAt: t, UpdatedAt: t, PasswordChangedAt: &t}
	put, err := putJSON(UsersPrefix+u.UserID, u)
	if err != nil {
		return nil, err
	}
	event := "security.user.created"
	if extra != nil {
		event = "security.bootstrap"
	}
	aud, err := a.Success(event, u.UserID, fmt.Sprintf("user %q with roles %s", username, strings.Join(roleIDs, ",")))
	if err != nil {
		return nil, err
	}
	nameKey := usernamesPrefix + strings.ToLower(username)
	req := store.TxnRequest{Compares: append([]store.Compare{store.Absent(nameKey)}, cmps...),
		Then: append([]store.Op{put, store.Put(nameKey, []byte(u.UserID)), aud}, touch...)}
	if extra != nil {
		req.Compares = append(req.Compares, *extra)
		req.Then = append(req.Then, store.Put(bootstrapKey, []byte(u.UserID)))
	}
	resp, err := s.Store.Txn(ctx, req)
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		if extra != nil {
			if kv, _, _ := store.Get(ctx, s.Store, bootstrapKey, store.Local); kv != nil {
				return nil, ErrBootstrapped
			}
		}
		return nil, fmt.Errorf("%w: the user name %q is taken, or a role changed meanwhile", ErrConflict, username)
	}
	return u, nil
}

// BootstrapRequired reports whether the first administrator is missing.
func (s *Service) BootstrapRequired(ctx context.Context) (bool, error) {
	kv, _, err := store.Get(ctx, s.Store, bootstrapKey, store.Local)
	return kv == nil, err
}

// Bootstrap creates the first super administrator. The compare on the
// bootstrap marker makes sure two racing requests cannot both succeed.
func (s *Service) Bootstrap(ctx context.Context, a Actor, username, password, displayName string) (*User, error) {
	a.Permissions = []string{permission.Super}
	marker := store.Absent(bootstrapKey)
	return s.createUser(ctx, a, username, password, displayName, StatusActive, []string{RoleSuperAdmin}, &marker)
}

// Effective returns what a user may do now: the union of its roles'
// permissions, and whether it is active.
func (s *Service) Effective(ctx context.Context, userID string) ([]string, bool, error) {
	u, _, err := s.User(ctx, userID)
	if err != nil {
		return nil, false, err
	}
	if u.Status != StatusActive {
		return nil, false, nil
	}
	perms, err := s.Permissions(ctx, u.RoleIDs)
	return perms, true, err
}

// UserByName reads a user by user name (case-insensitive) with its mod
// revision; ErrNotFound when there is none.
func (s *Service) UserByName(ctx context.Context, username string) (*User, int64, error) {
	if username == "" || len(username) > 256 || strings.Contains(username, "/") {
		return nil, 0, fmt.Errorf("%w: user %q", ErrNotFound, username)
	}
	kv, _, err := store.Get(ctx, s.Store, usernamesPrefix+strings.ToLower(username), store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil {
		return nil, 0, fmt.Errorf("%w: user %q", ErrNotFound, username)
	}
	return s.User(ctx, string(kv.Value))
}
