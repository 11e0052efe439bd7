package system

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/shared/buildinfo"
)

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

// OpenAPIAudit compares the contract's operations with the routes the
// server registered, and checks each operation carries its metadata.
func (s *Service) OpenAPIAudit(onlyProblems bool) contract.OpenApiAuditReport {
	rep := contract.OpenApiAuditReport{ContractVersion: s.d.Spec.Info.Version, GeneratedAt: time.Now().UTC(), Items: []contract.OpenApiAuditItem{}}
	routes := map[string]bool{}
	for _, r := range s.d.Routes() {
		if strings.HasPrefix(r.Path, InternalPrefix) || r.Path == "/metrics" {
			rep.InternalRouteCount++
			continue
		}
		routes[r.Method+" "+ginToContract(r.Path)] = true
		rep.RouteCount++
	}
	add := func(it contract.OpenApiAuditItem) {
		if it.Problem != contract.OpenApiAuditItemProblemNone {
			rep.ProblemCount++
		} else if onlyProblems {
			return
		}
		rep.Items = append(rep.Items, it)
	}
	seen := map[string]bool{}
	for path, item := range s.d.Spec.Paths.Map() {
		for method, op := range item.Operations() {
			rep.OperationCount++
			key := method + " " + path
			seen[key] = true
			it := contract.OpenApiAuditItem{
				Method:      method,
				Path:        path,
				OperationId: op.OperationID,
				Permission:  extStr(op.Extensions, "x-svc-permission"),
				Problem:     contract.OpenApiAuditItemProblemNone,
				Message:     "ok",
			}
			switch {
			case !routes[key]:
				it.Problem, it.Message = contract.OpenApiAuditItemProblemMissingRoute, "the contract names this operation but the server has no route for it"
			case op.OperationID == "":
				it.Problem, it.Message = contract.OpenApiAuditItemProblemMissingOperationId, "operation has no operationId"
			case it.Permission == "":
				it.Problem, it.Message = contract.OpenApiAuditItemProblemMissingPermission, "operation has no x-svc-permission; the server denies it"
			case extStr(op.Extensions, "x-svc-module") == "":
				it.Problem, it.Message = contract.OpenApiAuditItemProblemMissingModule, "operation has no x-svc-module"
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
			contract.OpenApiAuditItem{
				Method:  m,
				Path:    p,
				Problem: contract.OpenApiAuditItemProblemUndocumentedRoute,
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
		rep.Items = append(rep.Items, contract.OpenApiAuditItem{Problem: contract.OpenApiAuditItemProblemMissingModule,
			Message: fmt.Sprintf("embedded contract version %s differs from the binary's %s", rep.ContractVersion, buildinfo.ContractVersion)})
	}
	return rep
}

// DocumentationAudit checks that the contract documents what it defines:
// every operation has a summary and description and, when deep, every
// parameter, request body, response and schema property is described.
func (s *Service) DocumentationAudit(onlyProblems, deep bool, maxResults int) contract.SourceDocumentationAuditReport {
	rep := contract.SourceDocumentationAuditReport{GeneratedAt: time.Now().UTC(), Items: []contract.DocumentationAuditItem{}}
	add := func(kind contract.DocumentationAuditItemKind, loc string, problem contract.DocumentationAuditItemProblem, msg string) {
		rep.CheckedItems++
		if problem != contract.DocumentationAuditItemProblemNone {
			rep.ProblemCount++
		} else if onlyProblems {
			return
		}
		if len(rep.Items) >= maxResults {
			rep.Truncated = true
			return
		}
		rep.Items = append(rep.Items, contract.DocumentationAuditItem{Kind: kind, Location: loc, Problem: problem, Message: msg})
	}
	check := func(kind contract.DocumentationAuditItemKind, loc, text string) {
		if strings.TrimSpace(text) == "" {
			add(kind, loc, contract.DocumentationAuditItemProblemMissingDescription, "no description")
		} else {
			add(kind, loc, contract.DocumentationAuditItemProblemNone, "described")
		}
	}
	paths := s.d.Spec.Paths.Map()
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
				add(contract.DocumentationAuditItemKindOperation, loc, contract.DocumentationAuditItemProblemMissingSummary, "no summary")
			} else {
				check(contract.DocumentationAuditItemKindOperation, loc, op.Description)
			}
			if !deep {
				continue
			}
			for _, p := range op.Parameters {
				if p.Value != nil {
					check(contract.DocumentationAuditItemKindParameter, loc+" parameter "+p.Value.Name, p.Value.Description)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				check(contract.DocumentationAuditItemKindRequestBody, loc+" request body", op.RequestBody.Value.Description)
			}
			codes := op.Responses.Map()
			cs := make([]string, 0, len(codes))
			for c := range codes {
				cs = append(cs, c)
			}
			sort.Strings(cs)
			for _, c := range cs {
				if r := codes[c]; r.Value != nil && r.Value.Description != nil {
					check(contract.DocumentationAuditItemKindResponse, loc+" response "+c, *r.Value.Description)
				} else {
					check(contract.DocumentationAuditItemKindResponse, loc+" response "+c, "")
				}
			}
		}
	}
	if deep {
		names := make([]string, 0, len(s.d.Spec.Components.Schemas))
		for n := range s.d.Spec.Components.Schemas {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sc := s.d.Spec.Components.Schemas[n].Value
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
				check(contract.DocumentationAuditItemKindSchemaProperty, "schema "+n+"."+p, describedBy(ref.Value))
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
