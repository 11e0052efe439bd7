package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/httpapi"
)

var traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// checkErrorBody asserts the one error body and the trace id header.
func checkErrorBody(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	var b struct{ Code, Message, TraceID string }
	var raw map[string]any
	r.json(t, &raw)
	b.Code, _ = raw["code"].(string)
	b.Message, _ = raw["message"].(string)
	b.TraceID, _ = raw["traceId"].(string)
	if (code != "" && b.Code != code) || b.Code == "" || b.Message == "" || !traceIDRe.MatchString(b.TraceID) || r.header.Get("X-Trace-Id") != b.TraceID {
		t.Fatalf("error body %s, want code %q with message and trace id matching header %q", r.body, code, r.header.Get("X-Trace-Id"))
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
	ts := startServer(t, "perm", "", "")
	ops, err := httpapi.LoadOperations()
	if err != nil {
		t.Fatal(err)
	}
	unrelated := ts.token("display-wall.view")
	super := ts.token("*")
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
				r := ts.do(op.Method, path, "", ct, body)
				var e struct{ Code string }
				json.Unmarshal(r.body, &e)
				if e.Code == "authentication_required" || e.Code == "api_token_required" || e.Code == "permission_denied" {
					t.Fatalf("public operation answered %d %s", r.status, e.Code)
				}
				return
			}
			checkErrorBody(t, ts.do(op.Method, path, "", ct, body), http.StatusUnauthorized, "authentication_required")
			if op.Permission != "auth" {
				checkErrorBody(t, ts.do(op.Method, path, unrelated, ct, body), http.StatusForbidden, "permission_denied")
			}
			holder := ts.token(op.Permission)
			if op.Credential == "console-session" {
				// Only console sessions pass; a token, even a super one, is refused.
				checkErrorBody(t, ts.do(op.Method, path, super, ct, body), http.StatusForbidden, "permission_denied")
				for name, c := range map[string]*console{"exact": ts.sessionWith(t, op.Permission), "super": ts.sessionWith(t, "*")} {
					var b any
					if body != nil {
						b = map[string]any{}
					}
					if r := c.do(op.Method, path, b); r.status == 401 || r.status == 403 {
						t.Fatalf("%s session got %d: %s", name, r.status, r.body)
					}
				}
				return
			}
			for name, tok := range map[string]string{"exact": holder, "super": super} {
				if r := ts.do(op.Method, path, tok, ct, body); r.status == 401 || r.status == 403 {
					t.Fatalf("%s permission holder got %d: %s", name, r.status, r.body)
				}
			}
		})
	}
}

// TestBadInputEverywhere sends malformed queries, bodies, content types and
// oversized bodies to every operation and checks the contract's error body;
// afterwards the store has not changed.
func TestBadInputEverywhere(t *testing.T) {
	ts := startServer(t, "bad", "", "")
	ops, _ := httpapi.LoadOperations()
	tok := ts.token("*")
	session := ts.sessionWith(t, "*") // for console-session operations
	rev := ts.s.Node.Revision()
	for _, op := range ops.All() {
		op := op
		path := concretePath(op)
		// A parameter the operation does not declare is refused, never
		// ignored (a misspelt filter would otherwise list everything).
		t.Run(op.Method+" "+op.Path+" ?noSuchFilter", func(t *testing.T) {
			var r response
			switch {
			case op.Credential == "console-session" && op.JSONBody:
				r = session.do(op.Method, path+"?noSuchFilter=x", map[string]any{})
			case op.Credential == "console-session":
				r = session.do(op.Method, path+"?noSuchFilter=x", nil)
			case op.JSONBody:
				r = ts.do(op.Method, path+"?noSuchFilter=x", tok, "application/json", []byte(`{}`))
			default:
				r = ts.do(op.Method, path+"?noSuchFilter=x", tok, "", nil)
			}
			checkErrorBody(t, r, http.StatusBadRequest, "invalid_query")
			if !strings.Contains(string(r.body), `\"noSuchFilter\"`) {
				t.Fatalf("the message does not name the parameter: %s", r.body)
			}
		})
		for _, p := range op.Params() {
			if p.In != "query" || p.Type == "string" {
				continue
			}
			t.Run(fmt.Sprintf("%s %s ?%s", op.Method, op.Path, p.Name), func(t *testing.T) {
				r := ts.do(op.Method, path+"?"+p.Name+"=not-a-"+p.Type, tok, "", nil)
				checkErrorBody(t, r, http.StatusBadRequest, "invalid_query")
			})
		}
		if !op.JSONBody {
			continue
		}
		t.Run(op.Method+" "+op.Path+" malformed", func(t *testing.T) {
			send := func(ct string, body []byte) response { return ts.do(op.Method, path, tok, ct, body) }
			if op.Credential == "console-session" {
				send = func(ct string, body []byte) response { return session.doRaw(op.Method, path, ct, body) }
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
	checkErrorBody(t, ts.do("POST", "/api/v2/system/runtime/tuning/plan", tok, "application/json", []byte(`{"values":{"kernel.panic":"1"}}`)), 400, "invalid_body")
	checkErrorBody(t, ts.do("PUT", "/api/v2/system/runtime/tuning", tok, "application/json", []byte(`{"values":{"net.core.somaxconn":"1"},"reason":"x"}`)), 400, "invalid_body")
	checkErrorBody(t, ts.do("POST", "/api/v2/system/tasks/no-such-task/run", tok, "application/json", []byte(`{"reason":"x"}`)), 404, "not_found")
	checkErrorBody(
		t,
		ts.do(
			"POST",
			"/api/v2/system/migration-audit/removed-protocol-residues/cleanup",
			tok,
			"application/json",
			[]byte(`{"prefixes":["/security/"],"reason":"x","dryRun":false}`),
		),
		409,
		"conflict",
	)
	checkErrorBody(t, ts.get("/api/v2/cluster/status?clusterId=other", tok), 404, "not_found")
	if r := ts.get("/api/v2/streams/sessions?streamId=x", tok); r.status != 400 ||
		!strings.Contains(string(r.body), "this operation takes: page, pageSize, mediaServerId, stream, state, channelId") {
		t.Fatalf("a misplaced filter: %d %s", r.status, r.body)
	}
	checkErrorBody(t, ts.get("/api/v2/no/such/route", tok), 404, "not_found")
	// Every filter of the command statistics (each once answered 500 when
	// it read a record field), and a bad one.
	for _, q := range []string{"nodeId=n1", "engineNodeId=n1", "status=Pending", "commandType=agent.ping", "requestedBy=api-token:x",
		"localOnly=true", "from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z", "sinceHours=2", "keyword=nightly"} {
		if r := ts.get("/api/v2/node/commands/stats?"+q, tok); r.status != 200 {
			t.Fatalf("stats?%s: %d %s", q, r.status, r.body)
		}
		if r := ts.get("/api/v2/node/commands?"+q, tok); r.status != 200 {
			t.Fatalf("commands?%s: %d %s", q, r.status, r.body)
		}
	}
	checkErrorBody(t, ts.get("/api/v2/node/commands/stats?status=Sleeping", tok), 400, "invalid_query")
	checkErrorBody(t, ts.do("DELETE", "/api/v2/system/info", tok, "", nil), 405, "method_not_allowed")
	if got := ts.s.Node.Revision(); got != rev {
		t.Fatalf("bad input changed the store: revision %d -> %d", rev, got)
	}
}

func TestHealthRevealsDetailsOnlyWithSystemView(t *testing.T) {
	ts := startServer(t, "health", "", "")
	var anon, viewer map[string]any
	ts.get("/health", "").json(t, &anon)
	if anon["status"] != "ok" || anon["version"] == "" || anon["details"] != nil || len(anon) != 2 {
		t.Fatalf("anonymous health = %v", anon)
	}
	ts.get("/health", ts.token("nodes.view")).json(t, &anon)
	if anon["details"] != nil {
		t.Fatal("details shown without system.view")
	}
	ts.get("/health", ts.token("system.view")).json(t, &viewer)
	if viewer["details"] == nil {
		t.Fatal("no details for system.view")
	}
	if r := ts.get("/metrics", ""); r.status != 401 {
		t.Fatalf("metrics without credential: %d", r.status)
	}
	if r := ts.get("/metrics", ts.token("system.view")); r.status != 200 || !strings.Contains(string(r.body), "svc_http_requests_total") ||
		!strings.Contains(string(r.body), "svc_raft_leader 1") {
		t.Fatalf("metrics: %d", r.status)
	}
}

func TestAuditsAndTasks(t *testing.T) {
	ts := startServer(t, "audit", "", "")
	tok := ts.token("*")
	var oa struct {
		OperationCount, RouteCount, ProblemCount int
	}
	ts.get("/api/v2/system/openapi-audit?onlyProblems=true", tok).json(t, &oa)
	if oa.ProblemCount != 0 || oa.OperationCount != oa.RouteCount || oa.OperationCount < 26 {
		t.Fatalf("openapi audit = %+v", oa)
	}
	var da struct{ ProblemCount int }
	ts.get("/api/v2/system/source-documentation-audit?onlyProblems=true&checkParameterAndReturnTags=true", tok).json(t, &da)
	if da.ProblemCount != 0 {
		t.Fatalf("documentation audit found %d problems", da.ProblemCount)
	}
	var schema struct {
		Integrity string
		Objects   []struct {
			Name string
			Ddl  *string
		}
	}
	ts.get("/api/v2/system/database-schema-audit?includeDdl=true&maxDdlChars=20", tok).json(t, &schema)
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
	ts.s.Node.Txn(t.Context(), txnPut("/rtmp/legacy/a", "x"))
	var ma struct {
		Residues []struct {
			Prefix   string
			KeyCount int
		}
	}
	ts.get("/api/v2/system/migration-audit?includeSamples=true", tok).json(t, &ma)
	if len(ma.Residues) != 1 || ma.Residues[0].Prefix != "/rtmp/legacy/" {
		t.Fatalf("residues = %+v", ma.Residues)
	}
	r := ts.do(
		"POST",
		"/api/v2/system/migration-audit/removed-protocol-residues/cleanup",
		tok,
		"application/json",
		[]byte(`{"prefixes":["/rtmp/legacy/"],"reason":"removed protocol","dryRun":false}`),
	)
	var cr struct{ DeletedKeys int }
	r.json(t, &cr)
	if cr.DeletedKeys != 1 {
		t.Fatalf("cleanup = %s", r.body)
	}
	var run struct {
		Succeeded bool
		Details   map[string]string
	}
	ts.do("POST", "/api/v2/system/tasks/store-snapshot/run", tok, "application/json", []byte(`{"reason":"test"}`)).json(t, &run)
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
	r = ts.get("/api/v2/system/readiness?checkDatabase=true&checkEngine=true", tok)
	r.json(t, &ready)
	if r.status != 503 || ready.Ready {
		t.Fatalf("readiness with no engine = %d %s", r.status, r.body)
	}
	// The online documentation is for console users; tokens use the
	// offline contract.
	checkErrorBody(t, ts.get("/api/v2/system/docs-ui?format=yaml", tok), 403, "permission_denied")
	viewer := ts.sessionWith(t, "system.view")
	if r := viewer.do("GET", "/api/v2/system/api-docs", nil); r.status != 302 || r.header.Get("Location") != "/api/v2/system/docs-ui" {
		t.Fatalf("api-docs = %d", r.status)
	}
	if r := viewer.do("GET", "/api/v2/system/docs-ui?format=yaml", nil); r.status != 200 || !strings.Contains(string(r.body), "openapi: 3.0.1") {
		t.Fatalf("docs yaml = %d", r.status)
	}
	if r := viewer.do("GET", "/api/v2/system/docs-ui", nil); r.status != 200 || !strings.Contains(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("docs page = %d", r.status)
	}
	checkErrorBody(t, ts.do("POST", "/api/v2/system/notifications/email/test", tok, "application/json", []byte(`{"to":"ops@example.com"}`)), 409, "notifications_not_configured")
}

func TestThreeNodeClusterOverHTTP(t *testing.T) {
	first := startServer(t, "c1", "", "")
	second := startServer(t, "c2", first.url, first.keyFile())
	third := startServer(t, "c3", second.url, first.keyFile()) // join through a follower
	tok := first.token("*")
	for _, ts := range []*testServer{first, second, third} {
		ts.s.Node.WaitForRevision(t.Context(), first.s.Node.Revision())
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
	third.get("/api/v2/cluster/status", tok).json(t, &st)
	if len(st.Members) != 3 || st.LeaderID != "c1" {
		t.Fatalf("status from c3 = %+v", st)
	}
	for _, m := range st.Members {
		if !m.Health.Reachable || m.Health.Status != "ok" {
			t.Fatalf("member %+v not healthy", m)
		}
	}
	// Linearizable reads on request; a bad consistency value is refused.
	req, _ := http.NewRequest("GET", third.url+"/api/v2/system/info", nil)
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
	if r := second.get("/api/v2/system/readiness", tok); r.status != 200 {
		t.Fatalf("readiness on follower: %d %s", r.status, r.body)
	}
	var pa struct {
		Passed  bool
		Members []struct{ StateHash string }
	}
	third.get("/api/v2/system/parity-audit?checkDatabase=true&includeDetails=true", tok).json(t, &pa)
	if !pa.Passed || len(pa.Members) != 3 || pa.Members[0].StateHash == "" || pa.Members[0].StateHash != pa.Members[2].StateHash {
		t.Fatalf("parity = %+v", pa)
	}
	// Removing a member needs the cluster key; with it, c3 leaves.
	if err := RunRemoveMember([]string{"--server", second.url, "--cluster-key-file", first.keyFile(), "--node-id", "c3"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	third.get("/api/v2/cluster/status", tok) // still answers from its own state
	first.get("/api/v2/cluster/status", tok).json(t, &st)
	if len(st.Members) != 2 {
		t.Fatalf("after removal: %+v", st.Members)
	}
	// A node with the wrong cluster key cannot join.
	cfgKey := t.TempDir() + "/other.key"
	other := startServerExpectError(t, "intruder", first.url, cfgKey)
	if other == nil || !strings.Contains(other.Error(), "401") {
		t.Fatalf("join with a foreign key: %v", other)
	}
}

// deviceCredentialRefused: an operation of a meeting device takes its own
// credential only. Without one, and with a super API token (as the header
// and, where bearer tokens are read, as a bearer), it is refused by the
// operation's own check, never let through.
func deviceCredentialRefused(t *testing.T, ts *testServer, op *httpapi.Operation, super string) {
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
	if op.Credential == httpapi.CredentialRTCAccessTicket {
		body, want = []byte(`{"accessTicket":"`+super+`"}`), "room_ticket_consumed"
	}
	send := func(header string) response {
		req, err := http.NewRequest(op.Method, ts.url+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if header != "" {
			req.Header.Set(header, map[string]string{"Authorization": "Bearer " + super}[header]+map[string]string{httpapi.RTCTokenHeader: super}[header])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: data}
	}
	for _, h := range []string{"", "Authorization", httpapi.RTCTokenHeader} {
		checkErrorBody(t, send(h), http.StatusUnauthorized, want)
	}
}
