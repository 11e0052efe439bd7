// Package account owns console users and roles: argon2id password hashes
// with a password policy, the built-in roles and custom roles composed from
// the permission catalogue, unique user and role names enforced with store
// compares, soft deletion that also revokes the user's API tokens, and the
// one-time bootstrap of the first administrator.
package account

import (
	"strings"

	"github.com/svcplatform/svc/controlplane/permission"
)

// Built-in role ids. They are defined in code, cannot be changed or deleted,
// and are the same on every cluster.
const (
	RoleSuperAdmin = "super-admin"
	RoleAdmin      = "admin"
	RoleOperator   = "operator"
	RoleViewer     = "viewer"
	RoleAuditor    = "auditor"
)

// Role is a named set of permissions.
type Role struct {
	RoleID      string   `json:"roleId"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	BuiltIn     bool     `json:"builtIn"`
	Permissions []string `json:"permissions"`
}

func pick(keep func(p permission.Point) bool) []string {
	var out []string
	for _, p := range permission.Points {
		if keep(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// BuiltInRoles lists the roles every cluster has.
var BuiltInRoles = []Role{
	{RoleSuperAdmin, "Super administrator", "every permission, including raw configuration and API tokens", true, []string{permission.Super}},
	{RoleAdmin, "Administrator", "everything except raw configuration files and API tokens", true, pick(func(p permission.Point) bool {
		return p.Name != "system.config.raw.manage" && !strings.HasPrefix(p.Name, "security.tokens.")
	})},
	{RoleOperator, "Operator", "runs channels, streams, devices, recordings, the display wall and meetings", true, pick(func(p permission.Point) bool {
		switch p.Category {
		case "channels", "streams", "devices", "recordings", "display-wall", "rtc":
			return true
		}
		return p.Name == "nodes.view" || p.Name == "system.view" || p.Name == "system.tasks.view" || p.Name == "system.logs.view"
	})},
	{RoleViewer, "Viewer", "reads everything operational and plays live and recorded video", true, pick(func(p permission.Point) bool {
		if p.Category == "security" || strings.HasPrefix(p.Name, "system.config") {
			return false
		}
		return strings.HasSuffix(p.Name, ".view") || p.Name == "streams.play" || p.Name == "recordings.play" || p.Name == "rtc.recordings.play"
	})},
	{RoleAuditor, "Auditor", "reads the audit log, users, roles, token digests and system state", true, []string{
		"security.audit.view", "security.users.view", "security.roles.view", "security.tokens.view", "system.view", "system.logs.view", "nodes.view", "channels.view",
	}},
}

func builtIn(id string) (Role, bool) {
	for _, r := range BuiltInRoles {
		if r.RoleID == id {
			return r, true
		}
	}
	return Role{}, false
}
