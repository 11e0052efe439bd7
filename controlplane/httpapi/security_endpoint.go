package httpapi

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/shared/buildinfo"
)

// securityEndpoints serves API tokens, the audit log, the permission
// catalogue and third-party capabilities.
type securityEndpoints struct {
	tokens *apitoken.Service
	audit  audit.Reader
}

// actor describes the caller of a request for the services and the audit.
func actor(raw context.Context) apitoken.Actor {
	a := apitoken.Actor{Actor: audit.Actor{Type: "anonymous"}}
	if c, ok := raw.(*gin.Context); ok {
		a.ClientAddress, a.TraceID = c.ClientIP(), traceID(c)
	}
	if id := identity.From(requestContext(raw)); id != nil {
		a.Type, a.ID, a.UserID, a.Permissions = string(id.Kind), id.CredentialID, id.Subject, id.Permissions
		if id.Kind == identity.KindAPIToken {
			a.Token = &apitoken.Limits{ExpiresAt: id.ExpiresAt, AllowedIPs: id.AllowedIPs}
		}
	}
	return a
}

// toAPIToken is a token as answers show it, with when it was last used.
func (e *securityEndpoints) toAPIToken(ctx context.Context, r *apitoken.Record, now time.Time) contract.ApiToken {
	out := toAPIToken(r, now)
	out.LastUsedAt = e.tokens.LastUsed(ctx, r.TokenID)
	return out
}

func toAPIToken(r *apitoken.Record, now time.Time) contract.ApiToken {
	allowed := r.AllowedIPs
	if allowed == nil {
		allowed = []string{}
	}
	return contract.ApiToken{
		TokenId: r.TokenID, Name: r.Name, Purpose: r.Purpose, OwnerUserId: r.OwnerUserID,
		TokenPrefix: r.TokenPrefix, DigestPrefix: r.Digest[:min(12, len(r.Digest))],
		Permissions: r.Permissions, AllowedIps: allowed, NotBefore: r.NotBefore, ExpiresAt: r.ExpiresAt,
		Revealable: r.Revealable, State: contract.ApiTokenState(r.State(now)), CreatedAt: r.CreatedAt,
		CreatedBy: r.CreatedBy, RevokedAt: r.RevokedAt, RotatedAt: r.RotatedAt,
	}
}

func (e *securityEndpoints) ListApiTokens(ctx context.Context, r contract.ListApiTokensRequestObject) (contract.ListApiTokensResponseObject, error) {
	ctx = requestContext(ctx)
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	recs, total, err := e.tokens.List(ctx, deref(r.Params.OwnerUserId, ""), deref(r.Params.IncludeRevoked, false), page, size)
	if err != nil {
		return nil, err
	}
	out := contract.ListApiTokens200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.ApiToken{}}
	now := time.Now()
	for i := range recs {
		out.Rows = append(out.Rows, e.toAPIToken(ctx, &recs[i], now))
	}
	return out, nil
}

func (e *securityEndpoints) CreateApiToken(ctx context.Context, r contract.CreateApiTokenRequestObject) (contract.CreateApiTokenResponseObject, error) {
	b := r.Body
	perms := b.Permissions
	rec, tok, err := e.tokens.Create(requestContext(ctx), actor(ctx), apitoken.Input{
		Name: &b.Name, Purpose: b.Purpose, Permissions: &perms, AllowedIPs: b.AllowedIps,
		NotBefore: b.NotBefore, ExpiresAt: b.ExpiresAt, Revealable: deref(b.Revealable, false),
	})
	if err != nil {
		return nil, err
	}
	return contract.CreateApiToken200JSONResponse{TokenId: rec.TokenID, Token: tok, ApiToken: e.toAPIToken(requestContext(ctx), rec, time.Now())}, nil
}

func (e *securityEndpoints) UpdateApiToken(ctx context.Context, r contract.UpdateApiTokenRequestObject) (contract.UpdateApiTokenResponseObject, error) {
	b := r.Body
	rec, err := e.tokens.Update(requestContext(ctx), actor(ctx), r.TokenId, apitoken.Input{
		Name: b.Name, Purpose: b.Purpose, Permissions: b.Permissions, AllowedIPs: b.AllowedIps, NotBefore: b.NotBefore, ExpiresAt: b.ExpiresAt,
	})
	if err != nil {
		return nil, err
	}
	return contract.UpdateApiToken200JSONResponse(e.toAPIToken(requestContext(ctx), rec, time.Now())), nil
}

func (e *securityEndpoints) RevokeApiToken(ctx context.Context, r contract.RevokeApiTokenRequestObject) (contract.RevokeApiTokenResponseObject, error) {
	rec, err := e.tokens.Revoke(requestContext(ctx), actor(ctx), r.TokenId)
	if err != nil {
		return nil, err
	}
	return contract.RevokeApiToken200JSONResponse(e.toAPIToken(requestContext(ctx), rec, time.Now())), nil
}

func (e *securityEndpoints) RevealApiToken(ctx context.Context, r contract.RevealApiTokenRequestObject) (contract.RevealApiTokenResponseObject, error) {
	tok, err := e.tokens.Reveal(requestContext(ctx), actor(ctx), r.TokenId)
	if err != nil {
		return nil, err
	}
	return contract.RevealApiToken200JSONResponse{TokenId: r.TokenId, Token: tok}, nil
}

func (e *securityEndpoints) RotateApiToken(ctx context.Context, r contract.RotateApiTokenRequestObject) (contract.RotateApiTokenResponseObject, error) {
	rec, tok, err := e.tokens.Rotate(requestContext(ctx), actor(ctx), r.TokenId)
	if err != nil {
		return nil, err
	}
	return contract.RotateApiToken200JSONResponse{TokenId: rec.TokenID, Token: tok, ApiToken: e.toAPIToken(requestContext(ctx), rec, time.Now())}, nil
}

func (e *securityEndpoints) ListSecurityAudit(ctx context.Context, r contract.ListSecurityAuditRequestObject) (contract.ListSecurityAuditResponseObject, error) {
	ctx = requestContext(ctx)
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	q := audit.Query{EventType: deref(r.Params.EventType, ""), Before: r.Params.Before, Page: page, PageSize: size}
	if r.Params.Outcome != nil {
		q.Outcome = string(*r.Params.Outcome)
	}
	recs, total, err := audit.List(ctx, e.audit, q)
	if err != nil {
		return nil, err
	}
	out := contract.ListSecurityAudit200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.AuditRecord{}}
	for _, a := range recs {
		out.Rows = append(out.Rows, contract.AuditRecord{AuditId: a.AuditID, EventType: a.EventType, Outcome: contract.AuditRecordOutcome(a.Outcome),
			ActorType: contract.AuditRecordActorType(a.ActorType), ActorId: a.ActorID, ClientAddress: a.ClientAddress, TraceId: a.TraceID,
			OccurredAt: a.OccurredAt, Target: a.Target, Message: a.Message})
	}
	return out, nil
}

func (e *securityEndpoints) ListPermissions(ctx context.Context, _ contract.ListPermissionsRequestObject) (contract.ListPermissionsResponseObject, error) {
	out := contract.ListPermissions200JSONResponse{Rows: []contract.Permission{}}
	for _, p := range permission.Points {
		out.Rows = append(out.Rows, contract.Permission{Name: contract.PermissionName(p.Name), Category: p.Category, Description: p.Description})
	}
	return out, nil
}

func (e *securityEndpoints) GetThirdPartyCapabilities(
	ctx context.Context,
	_ contract.GetThirdPartyCapabilitiesRequestObject,
) (contract.GetThirdPartyCapabilitiesResponseObject, error) {
	ctx = requestContext(ctx)
	id := identity.From(ctx)
	rec, err := e.tokens.Get(ctx, id.CredentialID)
	if err != nil {
		return nil, err
	}
	out := contract.GetThirdPartyCapabilities200JSONResponse{TokenId: rec.TokenID, ContractVersion: buildinfo.ContractVersion,
		Permissions: rec.Permissions, ExpiresAt: rec.ExpiresAt, Categories: []contract.CapabilityCategory{}}
	for _, c := range permission.Categories {
		_, ok := permission.Within(rec.Permissions, c.Required)
		out.Categories = append(out.Categories, contract.CapabilityCategory{Category: c.Name, Description: c.Description, RequiredPermissions: c.Required, Available: ok})
	}
	return out, nil
}
