package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// changeUser applies fn to a live user and writes it with its audit record
// and fn's extra operations and guards through store.Update, then waits
// until every node has it. Whoever acts must hold everything the user
// holds (mayAct), checked on the record the write compares.
func (s *Service) changeUser(ctx context.Context, a Actor, id, event string, fn func(u *User) (string, []store.Compare, []store.Op, error)) (*User, error) {
	if strings.Contains(id, "/") {
		return nil, fmt.Errorf("%w: user %q", ErrNotFound, id)
	}
	var u *User
	resp, err := store.Update(ctx, s.Store, UsersPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: user %q", ErrNotFound, id)
		}
		cur, err := store.Decode[User](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		u = &cur
		if u.Status == StatusDeleted {
			return nil, nil, nil, fmt.Errorf("%w: user %q is deleted", ErrNotFound, id)
		}
		if err := s.mayAct(ctx, a, u); err != nil {
			return nil, nil, nil, err
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
		return nil, fmt.Errorf("%w: %w", ErrConflict, err)
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
				c, err := s.keepOneSuperAdmin(ctx, u)
				if err != nil {
					return "", nil, nil, err
				}
				cmps = append(cmps, c...)
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
				k, err := s.keepOneSuperAdmin(ctx, u)
				if err != nil {
					return "", nil, nil, err
				}
				c = append(c, k...)
			}
			u.RoleIDs, u.SessionEpoch, cmps, ops, changed = ids, u.SessionEpoch+1, append(cmps, c...), o, append(changed, "roles")
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
// super administrator, which would lock everyone out. When u is one, it
// returns a compare on the record of another active super administrator,
// to go into the same Txn as u's change: two concurrent removals, on any
// nodes, cannot both pass, because the one that commits first changes the
// record the other compares (or the later one finds nobody left). One
// compare is enough: the last removal to commit saw its witness unchanged,
// so the witness is still there.
func (s *Service) keepOneSuperAdmin(ctx context.Context, u *User) ([]store.Compare, error) {
	if u.Status != StatusActive || !contains(u.RoleIDs, RoleSuperAdmin) {
		return nil, nil
	}
	users, _, err := s.Users(ctx, UserQuery{Status: StatusActive, Page: 1, PageSize: 1 << 30})
	if err != nil {
		return nil, err
	}
	for _, listed := range users {
		if listed.UserID == u.UserID || !contains(listed.RoleIDs, RoleSuperAdmin) {
			continue
		}
		other, rev, err := s.User(ctx, listed.UserID)
		if err != nil {
			continue
		}
		if other.Status == StatusActive && contains(other.RoleIDs, RoleSuperAdmin) {
			return []store.Compare{store.ModRevisionIs(UsersPrefix+other.UserID, rev)}, nil
		}
	}
	return nil, fmt.Errorf("%w: this is the last active super administrator", ErrConflict)
}

// SetPassword sets a new password (an administrator's reset, or a user's own
// change after the caller verified the current one) and revokes sessions.
func (s *Service) SetPassword(ctx context.Context, a Actor, id, newPassword string) error {
	_, err := s.changeUser(ctx, a, id, "security.user.password_changed", func(u *User) (string, []store.Compare, []store.Op, error) {
		if err := CheckPassword(u.Username, newPassword); err != nil {
			return "", nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
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
	_, err := s.changeUser(ctx, a, id, "security.user.deleted", func(u *User) (string, []store.Compare, []store.Op, error) {
		cmps, err := s.keepOneSuperAdmin(ctx, u)
		if err != nil {
			return "", nil, nil, err
		}
		u.Status, u.SessionEpoch = StatusDeleted, u.SessionEpoch+1
		ops, n, err := s.revokeTokensOf(ctx, u.UserID)
		return fmt.Sprintf("user %q deleted; %d API token(s) revoked", u.Username, n), cmps, ops, err
	})
	return err
}

func (s *Service) revokeTokensOf(ctx context.Context, userID string) ([]store.Op, int, error) {
	var ops []store.Op
	t := now()
	live, err := query.All(ctx, s.Reader, query.Query{Index: apitoken.Index.Name,
		Where: []query.Cond{query.Eq("owner_user_id", userID), query.IsNull("revoked_at")}}, query.JSON[apitoken.Record])
	if err != nil {
		return nil, 0, err
	}
	for _, r := range live {
		r.RevokedAt, r.Sealed = &t, ""
		op, err := apitoken.Put(r)
		if err != nil {
			return nil, 0, err
		}
		ops = append(ops, op)
	}
	return ops, len(ops), nil
}

// mayAct refuses an action on user u by a caller who does not hold all of
// u's permissions: whoever may manage users could otherwise reset a more
// privileged user's password and log in as them, or disable, demote,
// delete or sign out someone above them. A super administrator (`*`) is
// touched only by a caller holding `*`.
func (s *Service) mayAct(ctx context.Context, a Actor, u *User) error {
	perms, err := s.Permissions(ctx, u.RoleIDs)
	if err != nil {
		return err
	}
	if contains(u.RoleIDs, RoleSuperAdmin) {
		perms = append(perms, permission.Super)
	}
	if missing, ok := permission.Within(a.Permissions, perms); !ok {
		return fmt.Errorf("%w: user %q holds %q, which you do not; only a caller holding every permission of a user may change it", ErrBeyondGranter, u.Username, missing)
	}
	return nil
}
