package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// tokenOwnedBy writes a token record owned by a user, as the console will
// when a logged-in user creates one.
func tokenOwnedBy(ts *controlnode.Node, t *testing.T, userID string, perms ...string) string {
	t.Helper()
	tok, _ := apitoken.New()
	op, _ := apitoken.Put(apitoken.Record{TokenID: fmt.Sprintf("u-%d", time.Now().UnixNano()), Name: "user token", OwnerUserID: userID,
		Digest: apitoken.Digest(tok), Permissions: perms, CreatedAt: time.Now()})
	if _, err := ts.S.Node.Txn(context.Background(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestBootstrapOnlyOnceEvenWhenRacing(t *testing.T) {
	ts := controlnode.StartNode(t, "boot", "", "")
	var st struct{ BootstrapRequired bool }
	ts.Get("/api/v2/auth/bootstrap-status", "").JSON(t, &st)
	if !st.BootstrapRequired {
		t.Fatal("fresh cluster does not ask for bootstrap")
	}
	checkErrorBody(t, ts.Do("POST", "/api/v2/auth/bootstrap", "", "application/json", []byte(`{"username":"root","password":"short"}`)), 400, "invalid_body")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf(`{"username":"admin%d","password":"correct horse battery staple %d"}`, i, i)
			req, _ := http.NewRequest("POST", ts.URL+"/api/v2/auth/bootstrap", bytesReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}(i)
	}
	wg.Wait()
	if won := codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200; !won {
		t.Fatalf("racing bootstraps answered %v; exactly one must win", codes)
	}
	ts.Get("/api/v2/auth/bootstrap-status", "").JSON(t, &st)
	if st.BootstrapRequired {
		t.Fatal("still asks for bootstrap")
	}
}

func TestUsersRolesAndTokenOwners(t *testing.T) {
	ts := controlnode.StartNode(t, "acct", "", "")
	admin := ts.Token("*")
	var rootUser struct {
		UserID string `json:"userId"`
	}
	ts.Do("POST", "/api/v2/auth/bootstrap", "", "application/json", []byte(`{"username":"root","password":"correct horse battery staple"}`)).JSON(t, &rootUser)

	// Password policy, unique names, grant ceiling.
	checkErrorBody(
		t,
		ts.Do("POST", "/api/v2/security/users", admin, "application/json", []byte(`{"username":"ann","password":"password1234","roleIds":["viewer"]}`)),
		400,
		"invalid_body",
	)
	r := ts.Do("POST", "/api/v2/security/users", admin, "application/json", []byte(`{"username":"ann","password":"violet tractor moonlight","roleIds":["viewer"]}`))
	var ann struct {
		UserID  string   `json:"userId"`
		RoleIDs []string `json:"roleIds"`
	}
	r.JSON(t, &ann)
	if r.Status != 200 || ann.RoleIDs[0] != "viewer" || containsText(string(r.Body), "argon2") {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	checkErrorBody(
		t,
		ts.Do("POST", "/api/v2/security/users", admin, "application/json", []byte(`{"username":"ANN","password":"violet tractor moonlight","roleIds":["viewer"]}`)),
		409,
		"conflict",
	)
	userAdmin := ts.Token("security.users.manage", "security.users.view")
	checkErrorBody(
		t,
		ts.Do("POST", "/api/v2/security/users", userAdmin, "application/json", []byte(`{"username":"bob","password":"violet tractor moonlight","roleIds":["operator"]}`)),
		403,
		"permission_denied",
	)
	checkErrorBody(
		t,
		ts.Do("POST", "/api/v2/security/users", admin, "application/json", []byte(`{"username":"bob","password":"violet tractor moonlight","roleIds":["no-such-role"]}`)),
		400,
		"invalid_body",
	)

	// A token never does more than its owner: ann is a viewer.
	annTok := tokenOwnedBy(ts, t, ann.UserID, "system.view", "security.users.view")
	if ts.Get("/api/v2/system/info", annTok).Status != 200 {
		t.Fatal("owner's permission not usable")
	}
	checkErrorBody(t, ts.Get("/api/v2/security/users", annTok), 403, "permission_denied")
	var me struct {
		User  *struct{ Username string }
		Roles []struct {
			RoleID string `json:"roleId"`
		}
		Permissions []string
	}
	ts.Get("/api/v2/auth/me", annTok).JSON(t, &me)
	if me.User == nil || me.User.Username != "ann" || len(me.Roles) != 1 || len(me.Permissions) != 1 {
		t.Fatalf("me = %+v", me)
	}

	// Custom role: bound roles cannot be deleted; built-in ones never.
	var role struct {
		RoleID string `json:"roleId"`
	}
	ts.Do("POST", "/api/v2/security/roles", admin, "application/json", []byte(`{"name":"Wall","permissions":["display-wall.view","security.users.view"]}`)).JSON(t, &role)
	checkErrorBody(t, ts.Do("POST", "/api/v2/security/roles", admin, "application/json", []byte(`{"name":"wall","permissions":["display-wall.view"]}`)), 409, "conflict")
	if r := ts.Do("PUT", "/api/v2/security/users/"+ann.UserID, admin, "application/json", []byte(fmt.Sprintf(`{"roleIds":["viewer",%q]}`, role.RoleID))); r.Status != 200 {
		t.Fatalf("bind role: %s", r.Body)
	}
	if ts.Get("/api/v2/security/users", annTok).Status != 200 {
		t.Fatal("role change did not take effect for the owner's token")
	}
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/security/roles/"+role.RoleID, admin, "", nil), 409, "conflict")
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/security/roles/viewer", admin, "", nil), 409, "conflict")
	checkErrorBody(t, ts.Do("PUT", "/api/v2/security/roles/admin", admin, "application/json", []byte(`{"name":"x","permissions":["system.view"]}`)), 409, "conflict")
	ts.Do("PUT", "/api/v2/security/users/"+ann.UserID, admin, "application/json", []byte(`{"roleIds":["viewer"]}`))
	if r := ts.Do("DELETE", "/api/v2/security/roles/"+role.RoleID, admin, "", nil); r.Status != 200 {
		t.Fatalf("delete unbound role: %d %s", r.Status, r.Body)
	}

	// Disabling stops the owner's tokens; deleting revokes them.
	ts.Do("PUT", "/api/v2/security/users/"+ann.UserID, admin, "application/json", []byte(`{"status":"disabled"}`))
	checkErrorBody(t, ts.Get("/api/v2/system/info", annTok), 401, "api_token_required")
	ts.Do("PUT", "/api/v2/security/users/"+ann.UserID, admin, "application/json", []byte(`{"status":"active"}`))
	if ts.Get("/api/v2/system/info", annTok).Status != 200 {
		t.Fatal("re-enabled owner's token refused")
	}
	if r := ts.Do("DELETE", "/api/v2/security/users/"+ann.UserID, admin, "", nil); r.Status != 200 {
		t.Fatalf("delete user: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, ts.Get("/api/v2/system/info", annTok), 401, "api_token_required")
	var toks struct {
		Rows []struct{ OwnerUserID, State string } `json:"rows"`
	}
	ts.Get("/api/v2/security/api-tokens?includeRevoked=true&ownerUserId="+ann.UserID, admin).JSON(t, &toks)
	if len(toks.Rows) != 1 || toks.Rows[0].State != "revoked" {
		t.Fatalf("deleted user's tokens = %+v", toks)
	}

	// The last active super administrator cannot be removed or demoted.
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/security/users/"+rootUser.UserID, admin, "", nil), 409, "conflict")
	checkErrorBody(t, ts.Do("PUT", "/api/v2/security/users/"+rootUser.UserID, admin, "application/json", []byte(`{"roleIds":["viewer"]}`)), 409, "conflict")

	// Password reset and session revocation move the session epoch.
	checkErrorBody(t, ts.Do("POST", "/api/v2/security/users/"+rootUser.UserID+"/password", admin, "application/json", []byte(`{"newPassword":"root"}`)), 400, "invalid_body")
	if r := ts.Do("POST", "/api/v2/security/users/"+rootUser.UserID+"/password", admin, "application/json", []byte(`{"newPassword":"another fine passphrase"}`)); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	var rev struct{ SessionEpoch int64 }
	ts.Do("POST", "/api/v2/security/users/"+rootUser.UserID+"/sessions/revoke", admin, "", nil).JSON(t, &rev)
	if rev.SessionEpoch != 2 {
		t.Fatalf("session epoch %d, want 2", rev.SessionEpoch)
	}
	var roles struct {
		Rows []struct {
			RoleID    string `json:"roleId"`
			UserCount int64
		}
	}
	ts.Get("/api/v2/security/roles", admin).JSON(t, &roles)
	if len(roles.Rows) != 5 || roles.Rows[0].RoleID != "super-admin" || roles.Rows[0].UserCount != 1 {
		t.Fatalf("roles = %+v", roles)
	}
}
