package adversarial

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

const (
	rootPassword  = "correct horse battery staple"
	adminPassword = "violet tractor moonlight sky"
	otherPassword = "other purple staple kettle"
)

// Item 1: security.users.manage (the built-in admin role, a custom role,
// an API token) acts only on users whose every permission it holds; a
// super administrator only by a holder of `*`. Before, an administrator
// reset the super administrator's password and logged in with `*`.
func TestAttack01ActingOnAMorePrivilegedUser(t *testing.T) {
	n := startNode(t, "a1", "", "", nil)
	rootID := n.bootstrap("root", rootPassword)
	super := n.token("*")
	n.createUser(super, "admin", adminPassword, "admin")
	auditor := n.createRole(super, "audit-and-users", "security.users.manage", "security.users.view", "security.audit.view")
	n.createUser(super, "usermgr", otherPassword, auditor)
	// A user holding something the custom-role manager does not.
	operatorID := n.createUser(super, "operator1", otherPassword, "operator")
	viewerID := n.createUser(super, "viewer1", otherPassword, "viewer")

	attackers := map[string]func(method, path string, body any) answer{
		"built-in admin session": login(t, n.api, "admin", adminPassword).do,
		"custom role session":    login(t, n.api, "usermgr", otherPassword).do,
		"API token":              tokenCaller(n, n.token("security.users.manage", "security.users.view")),
	}
	for name, do := range attackers {
		t.Run(name, func(t *testing.T) {
			for _, target := range []string{rootID, operatorID} {
				if name == "built-in admin session" && target == operatorID {
					continue // admin holds everything an operator does
				}
				refused(t, "reset password", do("POST", "/api/v2/security/users/"+target+"/password", map[string]string{"newPassword": "attacker chosen passphrase"}), 403, "permission_denied")
				refused(t, "disable", do("PUT", "/api/v2/security/users/"+target, map[string]string{"status": "disabled"}), 403, "permission_denied")
				refused(t, "demote", do("PUT", "/api/v2/security/users/"+target, map[string]any{"roleIds": []string{"viewer"}}), 403, "permission_denied")
				refused(t, "rename", do("PUT", "/api/v2/security/users/"+target, map[string]any{"displayName": "pwned"}), 403, "permission_denied")
				refused(t, "revoke sessions", do("POST", "/api/v2/security/users/"+target+"/sessions/revoke", nil), 403, "permission_denied")
				refused(t, "delete", do("DELETE", "/api/v2/security/users/"+target, nil), 403, "permission_denied")
			}
		})
	}
	// The attack's goal stays out of reach: root's password is unchanged.
	if c, a := tryLogin(t, n.api, "root", "attacker chosen passphrase", nil); c != nil {
		t.Fatalf("logged in as root with the attacker's password: %s", a)
	}
	login(t, n.api, "root", rootPassword)
	// What the ceiling allows still works: a viewer is reset by the admin.
	admin := login(t, n.api, "admin", adminPassword)
	if a := admin.do("POST", "/api/v2/security/users/"+viewerID+"/password", map[string]string{"newPassword": "a fresh viewer passphrase"}); a.status != 200 {
		t.Fatalf("admin resetting a viewer: %s", a)
	}
}

// tokenCaller sends requests with a bearer token.
func tokenCaller(n *node, token string) func(method, path string, body any) answer {
	return func(method, path string, body any) answer { return n.call(method, path, token, body) }
}

// Item 2: two super administrators disabled at the same time through
// different nodes of a 3-node cluster: one change wins, the other answers
// 409, and one active super administrator is always left. Before, the
// guard read outside the Txn and both disables passed.
func TestAttack02TheLastSuperAdministrator(t *testing.T) {
	a := startNode(t, "s1", "", "", nil)
	b := startNode(t, "s2", a.api, a.s.Config.KeyFile(), nil)
	c := startNode(t, "s3", a.api, a.s.Config.KeyFile(), nil)
	rootID := a.bootstrap("root", rootPassword)
	super := a.token("*")
	secondID := a.createUser(super, "root2", otherPassword, "super-admin")
	seenEverywhere := func(id string) {
		for _, via := range []*node{b, c} {
			testkit.Eventually(t, 10*time.Second, "the user on "+via.s.Config.NodeID, func() bool {
				return strings.Contains(string(via.call("GET", "/api/v2/security/users?pageSize=200", super, nil).body), id)
			})
		}
	}
	seenEverywhere(rootID)
	seenEverywhere(secondID)
	for round := range 6 {
		// Each round removes both through different nodes at once: a
		// disable against a disable, a delete or a demotion.
		first := []string{"PUT", "/api/v2/security/users/" + rootID}
		second := [][]string{{"PUT", "/api/v2/security/users/" + secondID}, {"PUT", "/api/v2/security/users/" + secondID}, {"DELETE", "/api/v2/security/users/" + secondID}}[round%3]
		bodies := []any{map[string]string{"status": "disabled"}, map[string]string{"status": "disabled"}}
		if round%3 == 1 {
			bodies[1] = map[string]any{"roleIds": []string{"viewer"}}
		}
		if round%3 == 2 {
			bodies[1] = nil
		}
		var wg sync.WaitGroup
		answers := make([]answer, 2)
		for i, via := range []*node{b, c} {
			req := [][]string{first, second}[i]
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = via.call(req[0], req[1], super, bodies[i])
			}()
		}
		wg.Wait()
		ok := 0
		for _, ans := range answers {
			switch ans.status {
			case 200:
				ok++
			case 409:
				refused(t, "the second removal", ans, 409, "conflict")
			default:
				t.Fatalf("round %d: %s", round, ans)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d removals passed (%s / %s); exactly one may", round, ok, answers[0], answers[1])
		}
		var list struct {
			Rows []struct {
				UserID, Status string
				RoleIds        []string
			}
		}
		a.call("GET", "/api/v2/security/users?status=active&pageSize=100", super, nil).decode(t, &list)
		supers := 0
		for _, u := range list.Rows {
			for _, r := range u.RoleIds {
				if r == "super-admin" {
					supers++
				}
			}
		}
		if supers != 1 {
			t.Fatalf("round %d: %d active super administrators", round, supers)
		}
		// Put both back for the next round (a deleted one comes back new).
		if round%3 == 2 && answers[1].status == 200 {
			secondID = a.createUser(super, fmt.Sprintf("root2x%d", round), otherPassword, "super-admin")
			seenEverywhere(secondID)
		}
		for _, id := range []string{rootID, secondID} {
			if ans := a.call("PUT", "/api/v2/security/users/"+id, super, map[string]any{"status": "active", "roleIds": []string{"super-admin"}}); ans.status != 200 {
				t.Fatalf("restoring %s: %s", id, ans)
			}
		}
	}
}

// Item 7: an API token cannot change its owner's password (nor use the
// operation to guess it); a session's wrong current passwords count toward
// the login failure counter, are audited, and past the threshold changes
// wait.
func TestAttack07ChangePasswordOracle(t *testing.T) {
	n := startNode(t, "a7", "", "", nil)
	n.bootstrap("root", rootPassword)
	super := n.token("*")
	victimID := n.createUser(super, "victim", otherPassword, "viewer")
	victim := login(t, n.api, "victim", otherPassword)
	// A token of the victim's, leaked from a backend.
	leaked := n.tokenOwnedBy(victimID, "channels.view")
	refused(t, "change-password with an API token", n.call("POST", "/api/v2/auth/change-password", leaked,
		map[string]string{"currentPassword": "guess one", "newPassword": "attacker chosen passphrase"}), 403, "permission_denied")

	// A stolen session guessing through change-password.
	for i := range 5 {
		refused(t, fmt.Sprintf("guess %d", i), victim.do("POST", "/api/v2/auth/change-password",
			map[string]string{"currentPassword": fmt.Sprintf("guess %d", i), "newPassword": "attacker chosen passphrase"}), 403, "invalid_credentials")
	}
	a := victim.do("POST", "/api/v2/auth/change-password", map[string]string{"currentPassword": otherPassword, "newPassword": "attacker chosen passphrase"})
	refused(t, "past the threshold even the right password waits", a, 429, "rate_limited")
	if a.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	failures := 0
	for _, r := range n.audit(super, "security.password_change") {
		if r.Outcome == "failure" && r.Target == "victim" {
			failures++
		}
	}
	if failures != 5 {
		t.Fatalf("%d audited password-change failures, want 5", failures)
	}
	// They counted toward the login counter: a login now needs a captcha.
	_, la := tryLogin(t, n.api, "victim", otherPassword, nil)
	refused(t, "login after the guesses", la, 401, "captcha_required")
}
