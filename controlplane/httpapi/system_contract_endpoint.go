package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
)

// The contract's own audits (controlplane/contractaudit): against the
// registered routes, and for its documentation.

func (e *systemEndpoints) GetOpenApiAudit(_ context.Context, r contract.GetOpenApiAuditRequestObject) (contract.GetOpenApiAuditResponseObject, error) {
	rep := e.contract.OpenAPI(deref(r.Params.OnlyProblems, false))
	out := contract.OpenApiAuditReport{ContractVersion: rep.ContractVersion, GeneratedAt: rep.GeneratedAt, RouteCount: int32(rep.RouteCount),
		InternalRouteCount: int32(rep.InternalRouteCount), OperationCount: int32(rep.OperationCount), ProblemCount: int32(rep.ProblemCount),
		Items: []contract.OpenApiAuditItem{}}
	for _, it := range rep.Items {
		out.Items = append(out.Items, contract.OpenApiAuditItem{Method: it.Method, Path: it.Path, OperationId: it.OperationID, Permission: it.Permission,
			Problem: contract.OpenApiAuditItemProblem(it.Problem), Message: it.Message})
	}
	return contract.GetOpenApiAudit200JSONResponse(out), nil
}

func (e *systemEndpoints) GetSourceDocumentationAudit(
	_ context.Context,
	r contract.GetSourceDocumentationAuditRequestObject,
) (contract.GetSourceDocumentationAuditResponseObject, error) {
	rep := e.contract.Documentation(deref(r.Params.OnlyProblems, false), deref(r.Params.CheckParameterAndReturnTags, false), int(deref(r.Params.MaxResults, 500)))
	out := contract.SourceDocumentationAuditReport{GeneratedAt: rep.GeneratedAt, CheckedItems: int32(rep.CheckedItems), ProblemCount: int32(rep.ProblemCount),
		Truncated: rep.Truncated, Items: []contract.DocumentationAuditItem{}}
	for _, it := range rep.Items {
		out.Items = append(out.Items, contract.DocumentationAuditItem{Kind: contract.DocumentationAuditItemKind(it.Kind), Location: it.Location,
			Problem: contract.DocumentationAuditItemProblem(it.Problem), Message: it.Message})
	}
	return contract.GetSourceDocumentationAudit200JSONResponse(out), nil
}
