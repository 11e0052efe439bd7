package adversarial

import (
	"testing"
	"time"
)

// Item 8: a security.tokens.manage token cannot lift its own limits: it
// never changes itself, and what it creates expires no later and is
// limited to addresses within its own. Revealing, rotating or revoking
// another user's token needs all of that token's permissions, and role
// managers edit or delete only roles within their own permissions.
func TestAttack08TokensLiftingTheirLimits(t *testing.T) {
	n := startNode(t, "a8", "", "", nil)
	n.bootstrap("root", rootPassword)
	super := n.token("*")
	root := login(t, n.api, "root", rootPassword)
	var rootTok struct{ TokenID string }
	if a := root.do("POST", "/api/v2/security/api-tokens", map[string]any{"name": "root automation", "permissions": []string{"*"}, "revealable": true}); a.status != 200 {
		t.Fatalf("root's token: %s", a)
	} else {
		a.decode(t, &rootTok)
	}
	tokenAdmin := n.createRole(super, "token-admin", "security.tokens.manage", "security.tokens.view")
	n.createUser(super, "tokman", otherPassword, tokenAdmin)
	tokman := login(t, n.api, "tokman", otherPassword)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var limited struct{ TokenID, Token string }
	if a := tokman.do("POST", "/api/v2/security/api-tokens", map[string]any{"name": "ci", "permissions": []string{"security.tokens.manage", "security.tokens.view"},
		"allowedIps": []string{"127.0.0.0/8"}, "expiresAt": expires}); a.status != 200 {
		t.Fatalf("the limited token: %s", a)
	} else {
		a.decode(t, &limited)
	}
	attacker := tokenCaller(n, limited.Token)

	t.Run("a token never changes itself", func(t *testing.T) {
		refused(t, "dropping its allow-list", attacker("PUT", "/api/v2/security/api-tokens/"+limited.TokenID, map[string]any{"allowedIps": []string{}}), 403, "permission_denied")
		refused(
			t,
			"extending its expiry",
			attacker("PUT", "/api/v2/security/api-tokens/"+limited.TokenID, map[string]any{"expiresAt": expires.Add(365 * 24 * time.Hour)}),
			403,
			"permission_denied",
		)
	})
	t.Run("children stay within the creator's limits", func(t *testing.T) {
		child := func(extra map[string]any) answer {
			body := map[string]any{"name": "child", "permissions": []string{"security.tokens.view"}}
			for k, v := range extra {
				body[k] = v
			}
			return attacker("POST", "/api/v2/security/api-tokens", body)
		}
		refused(t, "a child outliving its creator", child(map[string]any{"allowedIps": []string{"127.0.0.1/32"}, "expiresAt": expires.Add(time.Hour)}), 403, "permission_denied")
		refused(t, "a child usable from anywhere", child(map[string]any{"expiresAt": expires.Add(-time.Minute), "allowedIps": []string{"0.0.0.0/0"}}), 403, "permission_denied")
		refused(t, "a child from a wider range", child(map[string]any{"expiresAt": expires.Add(-time.Minute), "allowedIps": []string{"127.0.0.0/7"}}), 403, "permission_denied")
		if a := child(map[string]any{"expiresAt": expires.Add(-time.Minute), "allowedIps": []string{"127.0.0.1/32"}}); a.status != 200 {
			t.Fatalf("a child within the limits: %s", a)
		}
		// A child that names no limits takes its creator's.
		var inherited struct {
			ApiToken struct {
				ExpiresAt  *time.Time
				AllowedIps []string
			}
		}
		if a := child(nil); a.status != 200 {
			t.Fatalf("a child naming no limits: %s", a)
		} else {
			a.decode(t, &inherited)
		}
		if e := inherited.ApiToken.ExpiresAt; e == nil || !e.Equal(expires) || len(inherited.ApiToken.AllowedIps) != 1 || inherited.ApiToken.AllowedIps[0] != "127.0.0.0/8" {
			t.Fatalf("the child's limits: %+v", inherited.ApiToken)
		}
	})
	t.Run("another user's * token", func(t *testing.T) {
		refused(t, "reveal", attacker("POST", "/api/v2/security/api-tokens/"+rootTok.TokenID+"/reveal", nil), 403, "permission_denied")
		refused(t, "rotate", attacker("POST", "/api/v2/security/api-tokens/"+rootTok.TokenID+"/rotate", nil), 403, "permission_denied")
		refused(t, "revoke", attacker("DELETE", "/api/v2/security/api-tokens/"+rootTok.TokenID, nil), 403, "permission_denied")
		refused(t, "revoke from the session too", tokman.do("DELETE", "/api/v2/security/api-tokens/"+rootTok.TokenID, nil), 403, "permission_denied")
		var list struct {
			Rows []struct{ TokenID, State string }
		}
		n.call("GET", "/api/v2/security/api-tokens?pageSize=100", super, nil).decode(t, &list)
		for _, r := range list.Rows {
			if r.TokenID == rootTok.TokenID && r.State != "active" {
				t.Fatalf("root's token is %s", r.State)
			}
		}
	})
	t.Run("role managers stay within their roles", func(t *testing.T) {
		ops := n.createRole(super, "ops", "channels.manage", "channels.view", "streams.manage")
		manager := n.createRole(super, "role-manager", "security.roles.manage", "security.roles.view", "channels.view")
		n.createUser(super, "rolemgr", otherPassword, manager)
		rm := login(t, n.api, "rolemgr", otherPassword)
		refused(
			t,
			"narrowing a role above the manager",
			rm.do("PUT", "/api/v2/security/roles/"+ops, map[string]any{"name": "ops", "permissions": []string{"channels.view"}}),
			403,
			"permission_denied",
		)
		refused(t, "deleting a role above the manager", rm.do("DELETE", "/api/v2/security/roles/"+ops, nil), 403, "permission_denied")
		mine := n.createRole(super, "viewers-of-channels", "channels.view")
		edit := map[string]any{"name": "channel viewers", "permissions": []string{"channels.view", "security.roles.view"}}
		if a := rm.do("PUT", "/api/v2/security/roles/"+mine, edit); a.status != 200 {
			t.Fatalf("editing a role within the manager's permissions: %s", a)
		}
	})
}
