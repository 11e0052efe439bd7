package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

var traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// checkErrorBody asserts the one error body and the trace id header.
func checkErrorBody(t *testing.T, r controlnode.Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (body %s)", r.Status, status, r.Body)
	}
	var b struct{ Code, Message, TraceID string }
	var raw map[string]any
	r.JSON(t, &raw)
	b.Code, _ = raw["code"].(string)
	b.Message, _ = raw["message"].(string)
	b.TraceID, _ = raw["traceId"].(string)
	if (code != "" && b.Code != code) || b.Code == "" || b.Message == "" || !traceIDRe.MatchString(b.TraceID) || r.Header.Get("X-Trace-Id") != b.TraceID {
		t.Fatalf("error body %s, want code %q with message and trace id matching header %q", r.Body, code, r.Header.Get("X-Trace-Id"))
	}
}

// concretePath fills path parameters with plausible values: a number for
// integer parameters, a name for the others.
func concretePath(op *httpapi.Operation) string {
	p := op.Path
	for _, prm := range op.Params() {
		if prm.In == "path" && prm.Type == "integer" {
			p = strings.ReplaceAll(p, "{"+prm.Name+"}", "1")
		}
	}
	return regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "store-snapshot")
}

// TestPermissionMatrix is generated from the embedded contract, so every
// operation added later is covered without touching this test.
func TestPermissionMatrix(t *testing.T) {
	ts := controlnode.StartNode(t, "perm", "", "")
	ops, err := httpapi.LoadOperations()
	if err != nil {
		t.Fatal(err)
	}
	unrelated := ts.Token("display-wall.view")
	super := ts.Token("*")
	for _, op := range ops.All() {
		op := op
		t.Run(op.Method+" "+op.Path, func(t *testing.T) {
			path := concretePath(op)
			ct := ""
			var body []byte
			if op.JSONBody {
				ct, body = "application/json", []byte(`{}`)
			}
			if op.DeviceCredential() {
				deviceCredentialRefused(t, ts, op, super)
				return
			}
			if op.Public {
				// The guard lets anonymous callers through; an operation may
				// still check its own credential (refresh reads its cookie).
				r := ts.Do(op.Method, path, "", ct, body)
				var e struct{ Code string }
				json.Unmarshal(r.Body, &e)
				if e.Code == "authentication_required" || e.Code == "api_token_required" || e.Code == "permission_denied" {
					t.Fatalf("public operation answered %d %s", r.Status, e.Code)
				}
				return
			}
			checkErrorBody(t, ts.Do(op.Method, path, "", ct, body), http.StatusUnauthorized, "authentication_required")
			if op.Permission != "auth" {
				checkErrorBody(t, ts.Do(op.Method, path, unrelated, ct, body), http.StatusForbidden, "permission_denied")
			}
			holder := ts.Token(op.Permission)
			if op.Credential == "console-session" {
				// Only console sessions pass; a token, even a super one, is refused.
				checkErrorBody(t, ts.Do(op.Method, path, super, ct, body), http.StatusForbidden, "permission_denied")
				for name, c := range map[string]*console{"exact": sessionWith(ts, t, op.Permission), "super": sessionWith(ts, t, "*")} {
					var b any
					if body != nil {
						b = map[string]any{}
					}
					if r := c.Do(op.Method, path, b); r.Status == 401 || r.Status == 403 {
						t.Fatalf("%s session got %d: %s", name, r.Status, r.Body)
					}
				}
				return
			}
			for name, tok := range map[string]string{"exact": holder, "super": super} {
				if r := ts.Do(op.Method, path, tok, ct, body); r.Status == 401 || r.Status == 403 {
					t.Fatalf("%s permission holder got %d: %s", name, r.Status, r.Body)
				}
			}
		})
	}
}

// TestBadInputEverywhere sends malformed queries, bodies, content types and
// oversized bodies to every operation and checks the contract's error body;
// afterwards the store has not changed.
func TestBadInputEverywhere(t *testing.T) {
	ts := controlnode.StartNode(t, "bad", "", "")
	ops, _ := httpapi.LoadOperations()
	tok := ts.Token("*")
	session := sessionWith(ts, t, "*") // for console-session operations
	rev := ts.S.Node.Revision()
	for _, op := range ops.All() {
		op := op
		path := concretePath(op)
		// A parameter the operation does not declare is refused, never
		// ignored (a misspelt filter would otherwise list everything).
		t.Run(op.Method+" "+op.Path+" ?noSuchFilter", func(t *testing.T) {
			var r controlnode.Response
			switch {
			case op.Credential == "console-session" && op.JSONBody:
				r = session.Do(op.Method, path+"?noSuchFilter=x", map[string]any{})
			case op.Credential == "console-session":
				r = session.Do(op.Method, path+"?noSuchFilter=x", nil)
			case op.JSONBody:
				r = ts.Do(op.Method, path+"?noSuchFilter=x", tok, "application/json", []byte(`{}`))
			default:
				r = ts.Do(op.Method, path+"?noSuchFilter=x", tok, "", nil)
			}
			checkErrorBody(t, r, http.StatusBadRequest, "invalid_query")
			if !strings.Contains(string(r.Body), `\"noSuchFilter\"`) {
				t.Fatalf("the message does not name the parameter: %s", r.Body)
			}
		})
		for _, p := range op.Params() {
			if p.In != "query" || p.Type == "string" {
				continue
			}
			t.Run(fmt.Sprintf("%s %s ?%s", op.Method, op.Path, p.Name), func(t *testing.T) {
				r := ts.Do(op.Method, path+"?"+p.Name+"=not-a-"+p.Type, tok, "", nil)
				checkErrorBody(t, r, http.StatusBadRequest, "invalid_query")
			})
		}
		if !op.JSONBody {
			continue
		}
		t.Run(op.Method+" "+op.Path+" malformed", func(t *testing.T) {
			send := func(ct string, body []byte) controlnode.Response { return ts.Do(op.Method, path, tok, ct, body) }
			if op.Credential == "console-session" {
				send = func(ct string, body []byte) controlnode.Response { return session.doRaw(op.Method, path, ct, body) }
			}
			checkErrorBody(t, send("application/json", []byte(`{"reason": `)), http.StatusBadRequest, "invalid_body")
			checkErrorBody(t, send("application/json", []byte(`[1,2]`)), http.StatusBadRequest, "invalid_body")
			checkErrorBody(t, send("application/json", []byte(`{"unknownField": 1, "reason": 7}`)), http.StatusBadRequest, "invalid_body")
			checkErrorBody(t, send("text/plain", []byte(`{}`)), http.StatusUnsupportedMediaType, "unsupported_media_type")
			big := []byte(`{"reason":"` + strings.Repeat("a", 2<<20) + `"}`)
			checkErrorBody(t, send("application/json", big), http.StatusRequestEntityTooLarge, "payload_too_large")
		})
	}
	// Domain validation beyond the schema.
	checkErrorBody(t, ts.Do("POST", "/api/v2/system/runtime/tuning/plan", tok, "application/json", []byte(`{"values":{"kernel.panic":"1"}}`)), 400, "invalid_body")
	checkErrorBody(t, ts.Do("PUT", "/api/v2/system/runtime/tuning", tok, "application/json", []byte(`{"values":{"net.core.somaxconn":"1"},"reason":"x"}`)), 400, "invalid_body")
	checkErrorBody(t, ts.Do("POST", "/api/v2/system/tasks/no-such-task/run", tok, "application/json", []byte(`{"reason":"x"}`)), 404, "not_found")
	checkErrorBody(
		t,
		ts.Do(
			"POST",
			"/api/v2/system/migration-audit/removed-protocol-residues/cleanup",
			tok,
			"application/json",
			[]byte(`{"prefixes":["/security/"],"reason":"x","dryRun":false}`),
		),
		409,
		"conflict",
	)
	checkErrorBody(t, ts.Get("/api/v2/cluster/status?clusterId=other", tok), 404, "not_found")
	if r := ts.Get("/api/v2/streams/sessions?streamId=x", tok); r.Status != 400 ||
		!strings.Contains(string(r.Body), "this operation takes: page, pageSize, mediaServerId, stream, state, channelId") {
		t.Fatalf("a misplaced filter: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, ts.Get("/api/v2/no/such/route", tok), 404, "not_found")
	// Every filter of the command statistics (each once answered 500 when
	// it read a record field), and a bad one.
	for _, q := range []string{"nodeId=n1", "engineNodeId=n1", "status=Pending", "commandType=agent.ping", "requestedBy=api-token:x",
		"localOnly=true", "from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z", "sinceHours=2", "keyword=nightly"} {
		if r := ts.Get("/api/v2/node/commands/stats?"+q, tok); r.Status != 200 {
			t.Fatalf("stats?%s: %d %s", q, r.Status, r.Body)
		}
		if r := ts.Get("/api/v2/node/commands?"+q, tok); r.Status != 200 {
			t.Fatalf("commands?%s: %d %s", q, r.Status, r.Body)
		}
	}
	checkErrorBody(t, ts.Get("/api/v2/node/commands/stats?status=Sleeping", tok), 400, "invalid_query")
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/system/info", tok, "", nil), 405, "method_not_allowed")
	if got := ts.S.Node.Revision(); got != rev {
		t.Fatalf("bad input changed the store: revision %d -> %d", rev, got)
	}
}

func TestHealthRevealsDetailsOnlyWithSystemView(t *testing.T) {
	ts := controlnode.StartNode(t, "health", "", "")
	var anon, viewer map[string]any
	ts.Get("/health", "").JSON(t, &anon)
	if anon["status"] != "ok" || anon["version"] == "" || anon["details"] != nil || len(anon) != 2 {
		t.Fatalf("anonymous health = %v", anon)
	}
	ts.Get("/health", ts.Token("nodes.view")).JSON(t, &anon)
	if anon["details"] != nil {
		t.Fatal("details shown without system.view")
	}
	ts.Get("/health", ts.Token("system.view")).JSON(t, &viewer)
	if viewer["details"] == nil {
		t.Fatal("no details for system.view")
	}
	if r := ts.Get("/metrics", ""); r.Status != 401 {
		t.Fatalf("metrics without credential: %d", r.Status)
	}
	if r := ts.Get("/metrics", ts.Token("system.view")); r.Status != 200 || !strings.Contains(string(r.Body), "svc_http_requests_total") ||
		!strings.Contains(string(r.Body), "svc_raft_leader 1") {
		t.Fatalf("metrics: %d", r.Status)
	}
}

func TestAuditsAndTasks(t *testing.T) {
	ts := controlnode.StartNode(t, "audit", "", "")
	tok := ts.Token("*")
	var oa struct {
		OperationCount, RouteCount, ProblemCount int
	}
	ts.Get("/api/v2/system/openapi-audit?onlyProblems=true", tok).JSON(t, &oa)
	if oa.ProblemCount != 0 || oa.OperationCount != oa.RouteCount || oa.OperationCount < 26 {
		t.Fatalf("openapi audit = %+v", oa)
	}
	var da struct{ ProblemCount int }
	const docAudit = "/api/v2/system/source-documentation-audit?onlyProblems=true&checkParameterAndReturnTags=true"
	audit := ts.Get(docAudit, tok)
	if audit.JSON(t, &da); da.ProblemCount != 0 {
		t.Fatalf("documentation audit found %d problems: %s", da.ProblemCount, audit.Body)
	}
	var schema struct {
		Integrity string
		Objects   []struct {
			Name string
			Ddl  *string
		}
	}
	ts.Get("/api/v2/system/database-schema-audit?includeDdl=true&maxDdlChars=20", tok).JSON(t, &schema)
	found := false
	for _, o := range schema.Objects {
		if o.Name == "kv" && o.Ddl != nil && len(*o.Ddl) == 20 {
			found = true
		}
	}
	if schema.Integrity != "ok" || !found {
		t.Fatalf("schema audit = %+v", schema)
	}
	// A residue from a removed feature is reported and can be cleaned.
	ts.S.Node.Txn(t.Context(), txnPut("/rtmp/legacy/a", "x"))
	var ma struct {
		Residues []struct {
			Prefix   string
			KeyCount int
		}
	}
	ts.Get("/api/v2/system/migration-audit?includeSamples=true", tok).JSON(t, &ma)
	if len(ma.Residues) != 1 || ma.Residues[0].Prefix != "/rtmp/legacy/" {
		t.Fatalf("residues = %+v", ma.Residues)
	}
	r := ts.Do(
		"POST",
		"/api/v2/system/migration-audit/removed-protocol-residues/cleanup",
		tok,
		"application/json",
		[]byte(`{"prefixes":["/rtmp/legacy/"],"reason":"removed protocol","dryRun":false}`),
	)
	var cr struct{ DeletedKeys int }
	r.JSON(t, &cr)
	if cr.DeletedKeys != 1 {
		t.Fatalf("cleanup = %s", r.Body)
	}
	var run struct {
		Succeeded bool
		Details   map[string]string
	}
	ts.Do("POST", "/api/v2/system/tasks/store-snapshot/run", tok, "application/json", []byte(`{"reason":"test"}`)).JSON(t, &run)
	if !run.Succeeded || run.Details["index"] == "" {
		t.Fatalf("snapshot task = %+v", run)
	}
	var ready struct {
		Ready  bool
		Checks []struct {
			Name string
			Ok   bool
		}
	}
	r = ts.Get("/api/v2/system/readiness?checkDatabase=true&checkEngine=true", tok)
	r.JSON(t, &ready)
	if r.Status != 503 || ready.Ready {
		t.Fatalf("readiness with no engine = %d %s", r.Status, r.Body)
	}
	// The online documentation is for console users; tokens use the
	// offline contract.
	checkErrorBody(t, ts.Get("/api/v2/system/docs-ui?format=yaml", tok), 403, "permission_denied")
	viewer := sessionWith(ts, t, "system.view")
	if r := viewer.Do("GET", "/api/v2/system/api-docs", nil); r.Status != 302 || r.Header.Get("Location") != "/api/v2/system/docs-ui" {
		t.Fatalf("api-docs = %d", r.Status)
	}
	if r := viewer.Do("GET", "/api/v2/system/docs-ui?format=yaml", nil); r.Status != 200 || !strings.Contains(string(r.Body), "openapi: 3.0.1") {
		t.Fatalf("docs yaml = %d", r.Status)
	}
	if r := viewer.Do("GET", "/api/v2/system/docs-ui", nil); r.Status != 200 || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("docs page = %d", r.Status)
	}
	checkErrorBody(t, ts.Do("POST", "/api/v2/system/notifications/email/test", tok, "application/json", []byte(`{"to":"ops@example.com"}`)), 409, "notifications_not_configured")
}

func TestThreeNodeClusterOverHTTP(t *testing.T) {
	first := controlnode.StartNode(t, "c1", "", "")
	second := controlnode.StartNode(t, "c2", first.URL, first.KeyFile())
	third := controlnode.StartNode(t, "c3", second.URL, first.KeyFile()) // join through a follower
	tok := first.Token("*")
	for _, ts := range []*controlnode.Node{first, second, third} {
		ts.S.Node.WaitForRevision(t.Context(), first.S.Node.Revision())
	}
	var st struct {
		LeaderID string `json:"leaderId"`
		Members  []struct {
			NodeID string `json:"nodeId"`
			Health struct {
				Reachable bool
				Status    string
			}
			HTTPAddress string `json:"httpAddress"`
		}
	}
	third.Get("/api/v2/cluster/status", tok).JSON(t, &st)
	// c1 founded the cluster, but on a loaded machine a missed heartbeat
	// can move the lead: any member may hold it, one must.
	if len(st.Members) != 3 || !slices.Contains([]string{"c1", "c2", "c3"}, st.LeaderID) {
		t.Fatalf("status from c3 = %+v", st)
	}
	for _, m := range st.Members {
		if !m.Health.Reachable || m.Health.Status != "ok" {
			t.Fatalf("member %+v not healthy", m)
		}
	}
	// Linearizable reads on request; a bad consistency value is refused.
	req, _ := http.NewRequest("GET", third.URL+"/api/v2/system/info", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Svc-Consistency", "linearizable")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("linearizable read on follower: %v %v", resp, err)
	}
	req.Header.Set("X-Svc-Consistency", "eventual-ish")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 400 {
		t.Fatalf("bad consistency value: %d", resp.StatusCode)
	}
	// A write through a follower (readiness round trip) works and the
	// parity audit finds every member at the same state hash.
	if r := second.Get("/api/v2/system/readiness", tok); r.Status != 200 {
		t.Fatalf("readiness on follower: %d %s", r.Status, r.Body)
	}
	var pa struct {
		Passed  bool
		Members []struct{ StateHash string }
	}
	third.Get("/api/v2/system/parity-audit?checkDatabase=true&includeDetails=true", tok).JSON(t, &pa)
	if !pa.Passed || len(pa.Members) != 3 || pa.Members[0].StateHash == "" || pa.Members[0].StateHash != pa.Members[2].StateHash {
		t.Fatalf("parity = %+v", pa)
	}
	// Removing a member needs the cluster key; with it, c3 leaves.
	if err := server.RunRemoveMember([]string{"--server", second.URL, "--cluster-key-file", first.KeyFile(), "--node-id", "c3"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	third.Get("/api/v2/cluster/status", tok) // still answers from its own state
	first.Get("/api/v2/cluster/status", tok).JSON(t, &st)
	if len(st.Members) != 2 {
		t.Fatalf("after removal: %+v", st.Members)
	}
	// A node with the wrong cluster key cannot join.
	cfgKey := t.TempDir() + "/other.key"
	other := controlnode.StartExpectError(t, "intruder", first.URL, cfgKey)
	if other == nil || !strings.Contains(other.Error(), "401") {
		t.Fatalf("join with a foreign key: %v", other)
	}
}

// deviceCredentialRefused: an operation of a meeting device takes its own
// credential only. Without one, and with a super API token (as the header
// and, where bearer tokens are read, as a bearer), it is refused by the
// operation's own check, never let through.
func deviceCredentialRefused(t *testing.T, ts *controlnode.Node, op *httpapi.Operation, super string) {
	t.Helper()
	path := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(op.Path, "0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f")
	ct, body := op.BodyType, []byte("v=0\r\n")
	if op.JSONBody {
		ct, body = "application/json", []byte(`{"publicationId":"0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f"}`)
		if op.BodyOptional {
			body = []byte(`{}`)
		}
	}
	want := "rtc_token_invalid"
	if op.Credential == httpapi.CredentialArchiveTicket {
		want = "archive_ticket_invalid"
	}
	if op.Credential == httpapi.CredentialRTCAccessTicket {
		body, want = []byte(`{"accessTicket":"`+super+`"}`), "room_ticket_consumed"
	}
	send := func(header string) controlnode.Response {
		req, err := http.NewRequest(op.Method, ts.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if header != "" {
			req.Header.Set(header, map[string]string{"Authorization": "Bearer " + super}[header]+map[string]string{httpapi.RTCTokenHeader: super}[header])
		}
		return ts.Send(req)
	}
	for _, h := range []string{"", "Authorization", httpapi.RTCTokenHeader} {
		checkErrorBody(t, send(h), http.StatusUnauthorized, want)
	}
}
