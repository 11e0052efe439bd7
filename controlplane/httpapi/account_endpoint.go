package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/identity"
)

// accountEndpoints serves users, roles, the first-administrator bootstrap
// and the current identity.
type accountEndpoints struct {
	accounts *account.Service
	// csrf gives a console session its CSRF token, so a reloaded console
	// can recover it from auth/me.
	csrf func(sessionID string) string
}

func accountActor(raw context.Context) account.Actor {
	a := actor(raw)
	return account.Actor{Actor: a.Actor, Permissions: a.Permissions}
}

func toUser(u *account.User) contract.User {
	roles := u.RoleIDs
	if roles == nil {
		roles = []string{}
	}
	return contract.User{UserId: u.UserID, Username: u.Username, DisplayName: u.DisplayName, Status: contract.UserStatus(u.Status),
		RoleIds: roles, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, LastLoginAt: u.LastLoginAt, PasswordChangedAt: u.PasswordChangedAt}
}

func toRole(r *account.StoredRole, users int64) contract.Role {
	out := contract.Role{RoleId: r.RoleID, Name: r.Name, Description: r.Description, BuiltIn: r.BuiltIn, Permissions: r.Permissions, UserCount: users}
	if !r.BuiltIn {
		out.CreatedAt, out.UpdatedAt = &r.CreatedAt, &r.UpdatedAt
	}
	return out
}

func (e *accountEndpoints) ListUsers(ctx context.Context, r contract.ListUsersRequestObject) (contract.ListUsersResponseObject, error) {
	ctx = requestContext(ctx)
	q := account.UserQuery{Keyword: deref(r.Params.Keyword, ""), IncludeDeleted: deref(r.Params.IncludeDeleted, false),
		Page: int(deref(r.Params.Page, 1)), PageSize: int(deref(r.Params.PageSize, 50))}
	if r.Params.Status != nil {
		q.Status = string(*r.Params.Status)
	}
	users, total, err := e.accounts.Users(ctx, q)
	if err != nil {
		return nil, err
	}
	out := contract.ListUsers200JSONResponse{Page: int32(q.Page), PageSize: int32(q.PageSize), Total: total, Rows: []contract.User{}}
	for i := range users {
		out.Rows = append(out.Rows, toUser(&users[i]))
	}
	return out, nil
}

func (e *accountEndpoints) CreateUser(ctx context.Context, r contract.CreateUserRequestObject) (contract.CreateUserResponseObject, error) {
	b := r.Body
	status := ""
	if b.Status != nil {
		status = string(*b.Status)
	}
	u, err := e.accounts.CreateUser(requestContext(ctx), accountActor(ctx), b.Username, b.Password, deref(b.DisplayName, ""), status, b.RoleIds)
	if err != nil {
		return nil, err
	}
	return contract.CreateUser200JSONResponse(toUser(u)), nil
}

func (e *accountEndpoints) UpdateUser(ctx context.Context, r contract.UpdateUserRequestObject) (contract.UpdateUserResponseObject, error) {
	b := r.Body
	var status *string
	if b.Status != nil {
		s := string(*b.Status)
		status = &s
	}
	u, err := e.accounts.UpdateUser(requestContext(ctx), accountActor(ctx), r.UserId, b.DisplayName, status, b.RoleIds)
	if err != nil {
		return nil, err
	}
	return contract.UpdateUser200JSONResponse(toUser(u)), nil
}

func (e *accountEndpoints) DeleteUser(ctx context.Context, r contract.DeleteUserRequestObject) (contract.DeleteUserResponseObject, error) {
	if err := e.accounts.DeleteUser(requestContext(ctx), accountActor(ctx), r.UserId); err != nil {
		return nil, err
	}
	return contract.DeleteUser200JSONResponse(done(contract.ActionResultActionDeleted, r.UserId, "the user was deleted; its sessions and API tokens were revoked")), nil
}

func (e *accountEndpoints) ResetUserPassword(ctx context.Context, r contract.ResetUserPasswordRequestObject) (contract.ResetUserPasswordResponseObject, error) {
	if err := e.accounts.SetPassword(requestContext(ctx), accountActor(ctx), r.UserId, r.Body.NewPassword); err != nil {
		return nil, err
	}
	return contract.ResetUserPassword200JSONResponse(
		done(contract.ActionResultActionPasswordChanged, r.UserId, "the password was changed and every session of the user was revoked"),
	), nil
}

func (e *accountEndpoints) RevokeUserSessions(ctx context.Context, r contract.RevokeUserSessionsRequestObject) (contract.RevokeUserSessionsResponseObject, error) {
	u, err := e.accounts.RevokeSessions(requestContext(ctx), accountActor(ctx), r.UserId)
	if err != nil {
		return nil, err
	}
	return contract.RevokeUserSessions200JSONResponse{UserId: u.UserID, SessionEpoch: u.SessionEpoch}, nil
}

func (e *accountEndpoints) ListRoles(ctx context.Context, _ contract.ListRolesRequestObject) (contract.ListRolesResponseObject, error) {
	ctx = requestContext(ctx)
	roles, err := e.accounts.Roles(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := e.accounts.RoleUserCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := contract.ListRoles200JSONResponse{Rows: []contract.Role{}}
	for i := range roles {
		out.Rows = append(out.Rows, toRole(&roles[i], counts[roles[i].RoleID]))
	}
	return out, nil
}

func (e *accountEndpoints) CreateRole(ctx context.Context, r contract.CreateRoleRequestObject) (contract.CreateRoleResponseObject, error) {
	role, err := e.accounts.CreateRole(requestContext(ctx), accountActor(ctx), r.Body.Name, deref(r.Body.Description, ""), r.Body.Permissions)
	if err != nil {
		return nil, err
	}
	return contract.CreateRole200JSONResponse(toRole(role, 0)), nil
}

func (e *accountEndpoints) UpdateRole(ctx context.Context, r contract.UpdateRoleRequestObject) (contract.UpdateRoleResponseObject, error) {
	role, err := e.accounts.UpdateRole(requestContext(ctx), accountActor(ctx), r.RoleId, r.Body.Name, deref(r.Body.Description, ""), r.Body.Permissions)
	if err != nil {
		return nil, err
	}
	counts, _ := e.accounts.RoleUserCounts(requestContext(ctx))
	return contract.UpdateRole200JSONResponse(toRole(role, counts[role.RoleID])), nil
}

func (e *accountEndpoints) DeleteRole(ctx context.Context, r contract.DeleteRoleRequestObject) (contract.DeleteRoleResponseObject, error) {
	if err := e.accounts.DeleteRole(requestContext(ctx), accountActor(ctx), r.RoleId); err != nil {
		return nil, err
	}
	return contract.DeleteRole200JSONResponse(done(contract.ActionResultActionDeleted, r.RoleId, "the role was deleted")), nil
}

func (e *accountEndpoints) GetBootstrapStatus(ctx context.Context, _ contract.GetBootstrapStatusRequestObject) (contract.GetBootstrapStatusResponseObject, error) {
	req, err := e.accounts.BootstrapRequired(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	return contract.GetBootstrapStatus200JSONResponse{BootstrapRequired: req}, nil
}

func (e *accountEndpoints) BootstrapAdmin(ctx context.Context, r contract.BootstrapAdminRequestObject) (contract.BootstrapAdminResponseObject, error) {
	a := accountActor(ctx)
	a.Type = "anonymous"
	u, err := e.accounts.Bootstrap(requestContext(ctx), a, r.Body.Username, r.Body.Password, deref(r.Body.DisplayName, ""))
	if err != nil {
		return nil, err
	}
	return contract.BootstrapAdmin200JSONResponse(toUser(u)), nil
}

func (e *accountEndpoints) GetCurrentUser(ctx context.Context, _ contract.GetCurrentUserRequestObject) (contract.GetCurrentUserResponseObject, error) {
	ctx = requestContext(ctx)
	id := identity.From(ctx)
	out := contract.GetCurrentUser200JSONResponse{CredentialKind: contract.CurrentUserCredentialKind(id.Kind), CredentialId: id.CredentialID,
		Permissions: id.Permissions, Roles: []contract.Role{}}
	if out.Permissions == nil {
		out.Permissions = []string{}
	}
	if id.Kind == identity.KindSession && e.csrf != nil {
		tok := e.csrf(id.CredentialID)
		out.CsrfToken = &tok
	}
	if id.Subject != "" {
		if u, _, err := e.accounts.User(ctx, id.Subject); err == nil {
			cu := toUser(u)
			out.User = &cu
			for _, rid := range u.RoleIDs {
				if r, _, err := e.accounts.Role(ctx, rid); err == nil {
					out.Roles = append(out.Roles, toRole(r, 0))
				}
			}
		}
	}
	return out, nil
}
