package account

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
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
var Index = sqlitefsm.IndexSpec{Name: "users", Prefix: UsersPrefix, Columns: []sqlitefsm.IndexColumn{
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
	ErrInvalid       = errors.New("invalid request")
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("conflict")
	ErrBeyondGranter = errors.New("grants permissions the caller does not hold")
	ErrBootstrapped  = errors.New("an administrator already exists")
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

// Role returns a built-in or custom role.
func (s *Service) Role(ctx context.Context, id string) (*StoredRole, int64, error) {
	if r, ok := builtIn(id); ok {
		return &StoredRole{Role: r}, 0, nil
	}
	kv, _, err := store.Get(ctx, s.Store, RolesPrefix+id, store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil || strings.Contains(id, "/") {
		return nil, 0, fmt.Errorf("%w: role %q", ErrNotFound, id)
	}
	var r StoredRole
	return &r, kv.ModRevision, json.Unmarshal(kv.Value, &r)
}

// Roles lists built-in roles then custom roles by name.
func (s *Service) Roles(ctx context.Context) ([]StoredRole, error) {
	var out []StoredRole
	for _, r := range BuiltInRoles {
		out = append(out, StoredRole{Role: r})
	}
	resp, err := s.Store.Range(ctx, RolesPrefix, store.RangeOptions{End: store.PrefixEnd(RolesPrefix)})
	if err != nil {
		return nil, err
	}
	var custom []StoredRole
	for _, kv := range resp.KVs {
		var r StoredRole
		if json.Unmarshal(kv.Value, &r) == nil {
			custom = append(custom, r)
		}
	}
	sort.Slice(custom, func(i, j int) bool { return custom[i].Name < custom[j].Name })
	return append(out, custom...), nil
}

// RoleUserCounts counts users (not deleted) bound to each role.
func (s *Service) RoleUserCounts(ctx context.Context) (map[string]int64, error) {
	users, _, err := s.Users(ctx, UserQuery{Page: 1, PageSize: 1 << 30})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, u := range users {
		for _, r := range u.RoleIDs {
			out[r]++
		}
	}
	return out, nil
}

// Permissions is the union of the roles' permissions.
func (s *Service) Permissions(ctx context.Context, roleIDs []string) ([]string, error) {
	var all []string
	for _, id := range roleIDs {
		r, _, err := s.Role(ctx, id)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // a role deleted meanwhile grants nothing
			}
			return nil, err
		}
		all = append(all, r.Permissions...)
	}
	return permission.Normalize(all), nil
}

func validateRole(a Actor, name, desc string, perms []string) error {
	if n := len(strings.TrimSpace(name)); n == 0 || len(name) > 64 {
		return fmt.Errorf("%w: role name must be 1-64 characters", ErrInvalid)
	}
	if len(desc) > 512 {
		return fmt.Errorf("%w: description must be at most 512 characters", ErrInvalid)
	}
	if len(perms) == 0 {
		return fmt.Errorf("%w: a role needs at least one permission", ErrInvalid)
	}
	for _, p := range perms {
		if !permission.Known(p) {
			return fmt.Errorf("%w: unknown permission %q", ErrInvalid, p)
		}
	}
	if missing, ok := permission.Within(a.Permissions, perms); !ok {
		return fmt.Errorf("%w: %q", ErrBeyondGranter, missing)
	}
	return nil
}

// CreateRole stores a custom role with a unique name.
func (s *Service) CreateRole(ctx context.Context, a Actor, name, desc string, perms []string) (*StoredRole, error) {
	perms = permission.Normalize(perms)
	if err := validateRole(a, name, desc, perms); err != nil {
		return nil, err
	}
	id, _ := uuid.NewV7()
	t := now()
	r := &StoredRole{Role: Role{RoleID: id.String(), Name: name, Description: desc, Permissions: perms}, CreatedAt: t, UpdatedAt: t}
	nameKey := rolenamesPrefix + strings.ToLower(name)
	put, err := putJSON(RolesPrefix+r.RoleID, r)
	if err != nil {
		return nil, err
	}
	aud, err := a.Success("security.role.created", r.RoleID, fmt.Sprintf("role %q with %d permission(s)", name, len(perms)))
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(nameKey)},
		Then: []store.Op{put, store.Put(nameKey, []byte(r.RoleID)), aud}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: a role named %q exists", ErrConflict, name)
	}
	return r, nil
}

// UpdateRole changes a custom role; users holding it get the new
// permissions on their next request, everywhere once this returns.
func (s *Service) UpdateRole(ctx context.Context, a Actor, id, name, desc string, perms []string) (*StoredRole, error) {
	if _, ok := builtIn(id); ok {
		return nil, fmt.Errorf("%w: built-in roles cannot be changed", ErrConflict)
	}
	perms = permission.Normalize(perms)
	if err := validateRole(a, name, desc, perms); err != nil {
		return nil, err
	}
	// Users may change between the read and the write (a login records its
	// time on the user); retry on a lost compare after catching up.
	for attempt := 0; attempt < 5; attempt++ {
		r, resp, err := s.updateRoleOnce(ctx, a, id, name, desc, perms)
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return r, s.propagate(ctx, resp.Header.Revision)
		}
		if kv, _, err := store.Get(ctx, s.Store, rolenamesPrefix+strings.ToLower(name), store.Local); err == nil && kv != nil && string(kv.Value) != id {
			return nil, fmt.Errorf("%w: a role named %q exists", ErrConflict, name)
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: the role or its users kept changing; try again", ErrConflict)
}

func (s *Service) updateRoleOnce(ctx context.Context, a Actor, id, name, desc string, perms []string) (*StoredRole, *store.TxnResponse, error) {
	r, rev, err := s.Role(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	oldName := rolenamesPrefix + strings.ToLower(r.Name)
	newName := rolenamesPrefix + strings.ToLower(name)
	r.Name, r.Description, r.Permissions, r.UpdatedAt = name, desc, perms, now()
	put, err := putJSON(RolesPrefix+id, r)
	if err != nil {
		return nil, nil, err
	}
	aud, err := a.Success("security.role.updated", id, fmt.Sprintf("role %q now has %d permission(s)", name, len(perms)))
	if err != nil {
		return nil, nil, err
	}
	req := store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(RolesPrefix+id, rev)}, Then: []store.Op{put, aud}}
	// The contract asks a role change to end the sessions of its users at
	// once: their session epochs move in the same Txn, guarded so a user
	// changed meanwhile fails the whole update rather than keep a session.
	cmps, ops, err := s.bumpEpochsOfRole(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	req.Compares, req.Then = append(req.Compares, cmps...), append(req.Then, ops...)
	if oldName != newName {
		req.Compares = append(req.Compares, store.Absent(newName))
		req.Then = append(req.Then, store.Delete(oldName), store.Put(newName, []byte(id)))
	}
	resp, err := s.Store.Txn(ctx, req)
	return r, resp, err
}

// DeleteRole removes a custom role no user holds. Binding a role to a user
// touches the role record, so the compare here also catches a binding that
// races with the deletion.
func (s *Service) DeleteRole(ctx context.Context, a Actor, id string) error {
	if _, ok := builtIn(id); ok {
		return fmt.Errorf("%w: built-in roles cannot be deleted", ErrConflict)
	}
	r, rev, err := s.Role(ctx, id)
	if err != nil {
		return err
	}
	counts, err := s.RoleUserCounts(ctx)
	if err != nil {
		return err
	}
	if counts[id] > 0 {
		return fmt.Errorf("%w: role %q is bound to %d user(s)", ErrConflict, r.Name, counts[id])
	}
	aud, err := a.Success("security.role.deleted", id, fmt.Sprintf("role %q", r.Name))
	if err != nil {
		return err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(RolesPrefix+id, rev)},
		Then: []store.Op{store.Delete(RolesPrefix + id), store.Delete(rolenamesPrefix + strings.ToLower(r.Name)), aud}})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: the role changed meanwhile; read it again", ErrConflict)
	}
	return nil
}

// bumpEpochsOfRole returns guarded writes that move the session epoch of
// every live user holding role id.
func (s *Service) bumpEpochsOfRole(ctx context.Context, id string) ([]store.Compare, []store.Op, error) {
	users, _, err := s.Users(ctx, UserQuery{Page: 1, PageSize: 1 << 30})
	if err != nil {
		return nil, nil, err
	}
	var cmps []store.Compare
	var ops []store.Op
	for _, listed := range users {
		if !contains(listed.RoleIDs, id) {
			continue
		}
		u, rev, err := s.User(ctx, listed.UserID)
		if err != nil {
			return nil, nil, err
		}
		u.SessionEpoch++
		op, err := putJSON(UsersPrefix+u.UserID, u)
		if err != nil {
			return nil, nil, err
		}
		cmps, ops = append(cmps, store.ModRevisionIs(UsersPrefix+u.UserID, rev)), append(ops, op)
	}
	return cmps, ops, nil
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
	var where []string
	var args []any
	if q.Keyword != "" {
		where = append(where, "(instr(lower(i.username), lower(?)) > 0 OR instr(lower(coalesce(i.display_name, '')), lower(?)) > 0)")
		args = append(args, q.Keyword, q.Keyword)
	}
	if q.Status != "" {
		where = append(where, "i.status = ?")
		args = append(args, q.Status)
	} else if !q.IncludeDeleted {
		where = append(where, "i.status != 'deleted'")
	}
	return sqlitefsm.IndexPage[User](ctx, s.Reader, "idx_users", where, args, "i.username", q.Page, q.PageSize)
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
	var u User
	return &u, kv.ModRevision, json.Unmarshal(kv.Value, &u)
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
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
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

// changeUser applies fn to a live user and writes it with its audit record
// and fn's extra operations and guards through store.Update, then waits
// until every node has it.
func (s *Service) changeUser(ctx context.Context, a Actor, id, event string, fn func(u *User) (string, []store.Compare, []store.Op, error)) (*User, error) {
	if strings.Contains(id, "/") {
		return nil, fmt.Errorf("%w: user %q", ErrNotFound, id)
	}
	var u *User
	resp, err := store.Update(ctx, s.Store, UsersPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: user %q", ErrNotFound, id)
		}
		u = &User{}
		if err := json.Unmarshal(kv.Value, u); err != nil {
			return nil, nil, nil, err
		}
		if u.Status == StatusDeleted {
			return nil, nil, nil, fmt.Errorf("%w: user %q is deleted", ErrNotFound, id)
		}
		msg, cmps, extra, err := fn(u)
		if err != nil {
			return nil, nil, nil, err
		}
		u.UpdatedAt = now()
		val, err := json.Marshal(u)
		if err != nil {
			return nil, nil, nil, err
		}
		aud, err := a.Success(event, id, msg)
		return val, append([]store.Op{aud}, extra...), cmps, err
	})
	if errors.Is(err, store.ErrContended) {
		return nil, fmt.Errorf("%w: %v", ErrConflict, err)
	}
	if err != nil {
		return nil, err
	}
	return u, s.propagate(ctx, resp.Header.Revision)
}

// UpdateUser changes display name, status or roles; status and role
// changes revoke the user's sessions (the session epoch moves).
func (s *Service) UpdateUser(ctx context.Context, a Actor, id string, displayName, status *string, roleIDs *[]string) (*User, error) {
	return s.changeUser(ctx, a, id, "security.user.updated", func(u *User) (string, []store.Compare, []store.Op, error) {
		var changed []string
		var cmps []store.Compare
		var ops []store.Op
		if displayName != nil {
			if len(*displayName) > 128 {
				return "", nil, nil, fmt.Errorf("%w: display name must be at most 128 characters", ErrInvalid)
			}
			u.DisplayName, changed = *displayName, append(changed, "displayName")
		}
		if status != nil && *status != u.Status {
			if *status != StatusActive && *status != StatusDisabled {
				return "", nil, nil, fmt.Errorf("%w: status must be active or disabled", ErrInvalid)
			}
			if *status == StatusDisabled {
				if err := s.keepOneSuperAdmin(context.Background(), u.UserID); err != nil {
					return "", nil, nil, err
				}
			}
			u.Status, u.SessionEpoch, changed = *status, u.SessionEpoch+1, append(changed, "status")
		}
		if roleIDs != nil {
			ids := uniq(*roleIDs)
			c, o, err := s.rolesGuard(ctx, a, ids)
			if err != nil {
				return "", nil, nil, err
			}
			if !contains(ids, RoleSuperAdmin) {
				if err := s.keepOneSuperAdmin(context.Background(), u.UserID); err != nil {
					return "", nil, nil, err
				}
			}
			u.RoleIDs, u.SessionEpoch, cmps, ops, changed = ids, u.SessionEpoch+1, c, o, append(changed, "roles")
		}
		return "changed " + strings.Join(changed, ", "), cmps, ops, nil
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// keepOneSuperAdmin refuses to demote, disable or delete the last active
// super administrator, which would lock everyone out.
func (s *Service) keepOneSuperAdmin(ctx context.Context, leaving string) error {
	users, _, err := s.Users(ctx, UserQuery{Status: StatusActive, Page: 1, PageSize: 1 << 30})
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.UserID != leaving && contains(u.RoleIDs, RoleSuperAdmin) {
			return nil
		}
	}
	for _, u := range users {
		if u.UserID == leaving && contains(u.RoleIDs, RoleSuperAdmin) {
			return fmt.Errorf("%w: this is the last active super administrator", ErrConflict)
		}
	}
	return nil
}

// SetPassword sets a new password (an administrator's reset, or a user's own
// change after the caller verified the current one) and revokes sessions.
func (s *Service) SetPassword(ctx context.Context, a Actor, id, newPassword string) error {
	_, err := s.changeUser(ctx, a, id, "security.user.password_changed", func(u *User) (string, []store.Compare, []store.Op, error) {
		if err := CheckPassword(u.Username, newPassword); err != nil {
			return "", nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if VerifyPassword(u.PasswordHash, newPassword) {
			return "", nil, nil, fmt.Errorf("%w: the new password equals the current one", ErrInvalid)
		}
		h, err := HashPassword(newPassword)
		if err != nil {
			return "", nil, nil, err
		}
		t := now()
		u.PasswordHash, u.PasswordChangedAt, u.SessionEpoch = h, &t, u.SessionEpoch+1
		return "password changed; sessions revoked", nil, nil, nil
	})
	return err
}

// RevokeSessions ends every session of the user.
func (s *Service) RevokeSessions(ctx context.Context, a Actor, id string) (*User, error) {
	return s.changeUser(ctx, a, id, "security.user.sessions_revoked", func(u *User) (string, []store.Compare, []store.Op, error) {
		u.SessionEpoch++
		return "sessions revoked", nil, nil, nil
	})
}

// DeleteUser soft-deletes a user: it keeps the record, ends the sessions and
// revokes the user's API tokens in the same transaction.
func (s *Service) DeleteUser(ctx context.Context, a Actor, id string) error {
	if err := s.keepOneSuperAdmin(ctx, id); err != nil {
		return err
	}
	_, err := s.changeUser(ctx, a, id, "security.user.deleted", func(u *User) (string, []store.Compare, []store.Op, error) {
		u.Status, u.SessionEpoch = StatusDeleted, u.SessionEpoch+1
		ops, n, err := s.revokeTokensOf(ctx, u.UserID)
		return fmt.Sprintf("user %q deleted; %d API token(s) revoked", u.Username, n), nil, ops, err
	})
	return err
}

func (s *Service) revokeTokensOf(ctx context.Context, userID string) ([]store.Op, int, error) {
	var ops []store.Op
	t := now()
	err := s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		rows, err := tx.QueryContext(ctx, `SELECT kv.value FROM idx_api_tokens i JOIN kv ON kv.key = i.key WHERE i.owner_user_id = ? AND i.revoked_at IS NULL`, userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			var r apitoken.Record
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			r.RevokedAt, r.Sealed = &t, ""
			op, err := apitoken.Put(r)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		return rows.Err()
	})
	return ops, len(ops), err
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
