package contractaudit

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svcplatform/svc/shared/buildinfo"
)

const spec = `openapi: 3.0.3
info: {title: t, version: "%s"}
paths:
  /a/{id}:
    get:
      operationId: getA
      summary: Get an A
      description: Reads one A.
      x-svc-permission: a.view
      x-svc-module: a
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200": {description: the A}
  /b:
    post:
      operationId: postB
      x-svc-module: b
      responses:
        "200": {description: ""}
  /c:
    get:
      summary: no id
      x-svc-permission: c.view
      responses:
        "200": {description: ok}
components:
  schemas:
    A:
      type: object
      properties:
        name: {type: string, description: the name}
        size: {type: integer}
`

func load(t *testing.T, version string) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(strings.Replace(spec, "%s", version, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIAudit: a served, complete operation passes; an operation
// without a route, without an operationId or without a permission, and a
// route the contract does not describe are problems; internal routes and
// /metrics are counted apart; only-problems leaves out the passes.
func TestOpenAPIAudit(t *testing.T) {
	routes := []Route{{"GET", "/a/:id"}, {"GET", "/c"}, {"GET", "/d"}, {"POST", "/internal/x"}, {"GET", "/metrics"}}
	a := New(load(t, buildinfo.ContractVersion), func() []Route { return routes })
	rep := a.OpenAPI(false)
	if rep.RouteCount != 3 || rep.InternalRouteCount != 2 || rep.OperationCount != 3 || rep.ProblemCount != 3 {
		t.Fatalf("counts: %+v", rep)
	}
	want := map[string]Problem{"GET /a/{id}": ProblemNone, "POST /b": ProblemMissingRoute, "GET /c": ProblemMissingOperationID, "GET /d": ProblemUndocumentedRoute}
	if len(rep.Items) != len(want) {
		t.Fatalf("items: %+v", rep.Items)
	}
	for _, it := range rep.Items {
		if p, ok := want[it.Method+" "+it.Path]; !ok || p != it.Problem {
			t.Errorf("%s %s: %s, want %s", it.Method, it.Path, it.Problem, p)
		}
	}
	if rep.Items[0].Path != "/a/{id}" || rep.Items[0].Permission != "a.view" || rep.Items[0].OperationID != "getA" {
		t.Errorf("first item (sorted by path): %+v", rep.Items[0])
	}
	if only := a.OpenAPI(true); len(only.Items) != 3 || only.ProblemCount != 3 {
		t.Fatalf("only problems: %+v", only.Items)
	}
	// A served operation without a permission is denied by the server.
	routes = append(routes, Route{"POST", "/b"})
	for _, it := range a.OpenAPI(true).Items {
		if it.Path == "/b" && it.Problem != ProblemMissingPermission {
			t.Errorf("/b once served: %s", it.Problem)
		}
	}
	// /b, /c, /d and the version.
	rep = New(load(t, "0.0.0-other"), func() []Route { return routes }).OpenAPI(true)
	if last := rep.Items[len(rep.Items)-1]; rep.ProblemCount != 4 || !strings.Contains(last.Message, "differs from the binary's") {
		t.Fatalf("a contract of another version: %d problems, %+v", rep.ProblemCount, rep.Items)
	}
}

// TestDocumentationAudit: summaries and descriptions of operations, and
// when deep, of parameters, responses and schema properties, are checked;
// maxResults truncates the items but not the counts.
func TestDocumentationAudit(t *testing.T) {
	a := New(load(t, buildinfo.ContractVersion), func() []Route { return nil })
	shallow := a.Documentation(true, false, 100)
	if shallow.CheckedItems != 3 || shallow.ProblemCount != 2 || shallow.Truncated {
		t.Fatalf("shallow: %+v", shallow)
	}
	got := map[string]Problem{}
	for _, it := range shallow.Items {
		got[it.Location] = it.Problem
	}
	if got["POST /b"] != ProblemMissingSummary || got["GET /c"] != ProblemMissingDescription {
		t.Fatalf("shallow items: %+v", shallow.Items)
	}
	deep := a.Documentation(false, true, 100)
	// 3 operations, 1 parameter, 3 responses, 2 properties.
	if deep.CheckedItems != 9 || deep.ProblemCount != 5 || len(deep.Items) != 9 {
		t.Fatalf("deep: checked %d, problems %d, items %d: %+v", deep.CheckedItems, deep.ProblemCount, len(deep.Items), deep.Items)
	}
	kinds := map[string]Kind{}
	for _, it := range deep.Items {
		kinds[it.Location] = it.Kind
	}
	if kinds["GET /a/{id} parameter id"] != KindParameter || kinds["schema A.size"] != KindSchemaProperty || kinds["POST /b response 200"] != KindResponse {
		t.Fatalf("deep kinds: %+v", kinds)
	}
	if cut := a.Documentation(false, true, 4); !cut.Truncated || len(cut.Items) != 4 || cut.CheckedItems != 9 {
		t.Fatalf("truncated: %+v", cut)
	}
}
