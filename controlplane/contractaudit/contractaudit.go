// Package contractaudit audits the published contract: against the routes
// the server registered (every operation served, every public route
// described, each with its operationId, permission and module), and for
// its documentation (summaries and descriptions). It knows nothing of HTTP.
package contractaudit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svcplatform/svc/shared/buildinfo"
)

// Route is one registered HTTP route.
type Route struct {
	Method string
	Path   string // router form, /a/:b
}

// Auditor audits one contract against the routes of one server.
type Auditor struct {
	spec   *openapi3.T
	routes func() []Route
}

// New builds the auditor; routes is read at each audit, so it may be
// given before the router is built.
func New(spec *openapi3.T, routes func() []Route) *Auditor {
	return &Auditor{spec: spec, routes: routes}
}

// Problem is what an item of an audit found wrong.
type Problem string

// The problems of the contract audit and of the documentation audit.
const (
	ProblemNone               Problem = "none"
	ProblemMissingRoute       Problem = "missing_route"
	ProblemMissingOperationID Problem = "missing_operation_id"
	ProblemMissingPermission  Problem = "missing_permission"
	ProblemMissingModule      Problem = "missing_module"
	ProblemUndocumentedRoute  Problem = "undocumented_route"
	ProblemMissingSummary     Problem = "missing_summary"
	ProblemMissingDescription Problem = "missing_description"
)

// Kind is the kind of contract element a documentation item is about.
type Kind string

// The kinds of documented elements.
const (
	KindOperation      Kind = "operation"
	KindParameter      Kind = "parameter"
	KindRequestBody    Kind = "requestBody"
	KindResponse       Kind = "response"
	KindSchemaProperty Kind = "schemaProperty"
)

// Report is the contract audit against the routes.
type Report struct {
	ContractVersion    string
	GeneratedAt        time.Time
	RouteCount         int
	InternalRouteCount int
	OperationCount     int
	ProblemCount       int
	Items              []Item
}

// Item is one operation or route of the contract audit.
type Item struct {
	Method, Path, OperationID, Permission string
	Problem                               Problem
	Message                               string
}

// DocumentationReport is the documentation audit.
type DocumentationReport struct {
	GeneratedAt  time.Time
	CheckedItems int
	ProblemCount int
	// Truncated says more items were found than were asked for.
	Truncated bool
	Items     []DocumentationItem
}

// DocumentationItem is one checked element of the contract.
type DocumentationItem struct {
	Kind     Kind
	Location string // "GET /api/v2/system/info", "schema SystemInfo.version"
	Problem  Problem
	Message  string
}

// InternalPrefix marks routes that are service-internal entry points and
// therefore not part of the published contract.
const InternalPrefix = "/internal/"

func ginToContract(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

func extStr(ext map[string]any, name string) string {
	v, ok := ext[name]
	if !ok {
		return ""
	}
	return strings.Trim(fmt.Sprint(v), `"`)
}

// OpenAPI compares the contract's operations with the routes the
// server registered, and checks each operation carries its metadata.
func (s *Auditor) OpenAPI(onlyProblems bool) Report {
	rep := Report{ContractVersion: s.spec.Info.Version, GeneratedAt: time.Now().UTC(), Items: []Item{}}
	routes := map[string]bool{}
	for _, r := range s.routes() {
		if strings.HasPrefix(r.Path, InternalPrefix) || r.Path == "/metrics" {
			rep.InternalRouteCount++
			continue
		}
		routes[r.Method+" "+ginToContract(r.Path)] = true
		rep.RouteCount++
	}
	add := func(it Item) {
		if it.Problem != ProblemNone {
			rep.ProblemCount++
		} else if onlyProblems {
			return
		}
		rep.Items = append(rep.Items, it)
	}
	seen := map[string]bool{}
	for path, item := range s.spec.Paths.Map() {
		for method, op := range item.Operations() {
			rep.OperationCount++
			key := method + " " + path
			seen[key] = true
			it := Item{
				Method:      method,
				Path:        path,
				OperationID: op.OperationID,
				Permission:  extStr(op.Extensions, "x-svc-permission"),
				Problem:     ProblemNone,
				Message:     "ok",
			}
			switch {
			case !routes[key]:
				it.Problem, it.Message = ProblemMissingRoute, "the contract names this operation but the server has no route for it"
			case op.OperationID == "":
				it.Problem, it.Message = ProblemMissingOperationID, "operation has no operationId"
			case it.Permission == "":
				it.Problem, it.Message = ProblemMissingPermission, "operation has no x-svc-permission; the server denies it"
			case extStr(op.Extensions, "x-svc-module") == "":
				it.Problem, it.Message = ProblemMissingModule, "operation has no x-svc-module"
			}
			add(it)
		}
	}
	var extra []string
	for r := range routes {
		if !seen[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(extra)
	for _, r := range extra {
		m, p, _ := strings.Cut(r, " ")
		add(
			Item{
				Method:  m,
				Path:    p,
				Problem: ProblemUndocumentedRoute,
				Message: "the server serves this route but the contract does not describe it",
			},
		)
	}
	sort.SliceStable(rep.Items, func(i, j int) bool {
		if rep.Items[i].Path != rep.Items[j].Path {
			return rep.Items[i].Path < rep.Items[j].Path
		}
		return rep.Items[i].Method < rep.Items[j].Method
	})
	if rep.ContractVersion != buildinfo.ContractVersion {
		rep.ProblemCount++
		rep.Items = append(rep.Items, Item{Problem: ProblemMissingModule,
			Message: fmt.Sprintf("embedded contract version %s differs from the binary's %s", rep.ContractVersion, buildinfo.ContractVersion)})
	}
	return rep
}

// Documentation checks that the contract documents what it defines:
// every operation has a summary and description and, when deep, every
// parameter, request body, response and schema property is described.
func (s *Auditor) Documentation(onlyProblems, deep bool, maxResults int) DocumentationReport {
	rep := DocumentationReport{GeneratedAt: time.Now().UTC(), Items: []DocumentationItem{}}
	add := func(kind Kind, loc string, problem Problem, msg string) {
		rep.CheckedItems++
		if problem != ProblemNone {
			rep.ProblemCount++
		} else if onlyProblems {
			return
		}
		if len(rep.Items) >= maxResults {
			rep.Truncated = true
			return
		}
		rep.Items = append(rep.Items, DocumentationItem{Kind: kind, Location: loc, Problem: problem, Message: msg})
	}
	check := func(kind Kind, loc, text string) {
		if strings.TrimSpace(text) == "" {
			add(kind, loc, ProblemMissingDescription, "no description")
		} else {
			add(kind, loc, ProblemNone, "described")
		}
	}
	paths := s.spec.Paths.Map()
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, path := range keys {
		ops := paths[path].Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			op := ops[m]
			loc := m + " " + path
			if strings.TrimSpace(op.Summary) == "" {
				add(KindOperation, loc, ProblemMissingSummary, "no summary")
			} else {
				check(KindOperation, loc, op.Description)
			}
			if !deep {
				continue
			}
			for _, p := range op.Parameters {
				if p.Value != nil {
					check(KindParameter, loc+" parameter "+p.Value.Name, p.Value.Description)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				check(KindRequestBody, loc+" request body", op.RequestBody.Value.Description)
			}
			codes := op.Responses.Map()
			cs := make([]string, 0, len(codes))
			for c := range codes {
				cs = append(cs, c)
			}
			sort.Strings(cs)
			for _, c := range cs {
				if r := codes[c]; r.Value != nil && r.Value.Description != nil {
					check(KindResponse, loc+" response "+c, *r.Value.Description)
				} else {
					check(KindResponse, loc+" response "+c, "")
				}
			}
		}
	}
	if deep {
		names := make([]string, 0, len(s.spec.Components.Schemas))
		for n := range s.spec.Components.Schemas {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sc := s.spec.Components.Schemas[n].Value
			if sc == nil {
				continue
			}
			props := make([]string, 0, len(sc.Properties))
			for p := range sc.Properties {
				props = append(props, p)
			}
			sort.Strings(props)
			for _, p := range props {
				ref := sc.Properties[p]
				if ref.Ref != "" {
					continue // described by the schema it points to
				}
				check(KindSchemaProperty, "schema "+n+"."+p, describedBy(ref.Value))
			}
		}
	}
	return rep
}

func describedBy(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	return s.Description
}
