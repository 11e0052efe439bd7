package account

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
)

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
	r, err := store.Decode[StoredRole](kv)
	return &r, kv.ModRevision, err
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
		if r, err := store.Decode[StoredRole](kv); err == nil {
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
	if err := mayManageRole(a, r); err != nil {
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
	if err := mayManageRole(a, r); err != nil {
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

// mayManageRole refuses a change or deletion of a role that grants more
// than the caller holds: narrowing or removing it would take permissions
// from its users, above the caller's own standing (its new permissions are
// checked by validateRole).
func mayManageRole(a Actor, r *StoredRole) error {
	if missing, ok := permission.Within(a.Permissions, r.Permissions); !ok {
		return fmt.Errorf("%w: role %q grants %q, which you do not hold", ErrBeyondGranter, r.Name, missing)
	}
	return nil
}
