package httpapi

import (
	"bytes"
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/contractaudit"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/storeaudit"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/controlplane/tasks"
)

// systemEndpoints implements the strict server interface for module 01 and
// the cluster status; each method hands over to system.Service.
type systemEndpoints struct {
	svc       *system.Service
	tasks     *tasks.Registry
	contract  *contractaudit.Auditor
	cluster   *cluster.Service
	store     *storeaudit.Auditor
	retention *retention.Cleaner
	nodes     *nodes.Service
	yaml      []byte
	docs      []byte // rendered docs page
	// emails limits test e-mails per credential, and emailsAll on this
	// node: each one is a message to an address the caller chooses.
	emails, emailsAll *ratelimit.Limiter
}

// Test e-mails allowed per minute per credential, and per node.
const (
	testEmailsPerMinute     = 3
	testEmailsPerNodeMinute = 20
)

// mediaHosts counts the media hosts by status for the cluster status.
func mediaHosts(ctx context.Context, n *nodes.Service) (*contract.ClusterMediaHosts, error) {
	recs, err := n.List(ctx)
	if err != nil {
		return nil, err
	}
	h := &contract.ClusterMediaHosts{Total: int32(len(recs))}
	for _, r := range recs {
		switch r.Status {
		case nodes.StatusOnline:
			h.Online++
			if r.Engine.Media == nodes.MediaOnline {
				h.MediaServersOnline++
			}
		case nodes.StatusOffline:
			h.Offline++
		case nodes.StatusPending:
			h.Pending++
		case nodes.StatusRetired:
			h.Retired++
		}
	}
	return h, nil
}

// requestContext unwraps the *gin.Context the strict server passes as ctx:
// gin reuses that object after the response, so anything that outlives the
// handler call (SQLite's interrupt watcher, for one) must hold the request's
// own context instead.
func requestContext(ctx context.Context) context.Context {
	if c, ok := ctx.(*gin.Context); ok && c.Request != nil {
		return c.Request.Context()
	}
	return ctx
}

func actorOf(ctx context.Context) string {
	if id := identity.From(ctx); id != nil {
		return string(id.Kind) + ":" + id.CredentialID
	}
	return "anonymous"
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func (e *systemEndpoints) GetHealth(ctx context.Context, _ contract.GetHealthRequestObject) (contract.GetHealthResponseObject, error) {
	ctx = requestContext(ctx)
	snap := healthSnapshot(e.cluster.Health(ctx), identity.From(ctx).Has("system.view"))
	if snap.Status == contract.SvcHealthSnapshotStatusUnavailable {
		return contract.GetHealth503JSONResponse(snap), nil
	}
	return contract.GetHealth200JSONResponse(snap), nil
}

func (e *systemEndpoints) GetSystemReadiness(ctx context.Context, r contract.GetSystemReadinessRequestObject) (contract.GetSystemReadinessResponseObject, error) {
	ctx = requestContext(ctx)
	rep := readinessReport(e.cluster.Readiness(ctx, deref(r.Params.CheckDatabase, true), deref(r.Params.CheckEngine, false)))
	if !rep.Ready {
		return contract.GetSystemReadiness503JSONResponse(rep), nil
	}
	return contract.GetSystemReadiness200JSONResponse(rep), nil
}

func (e *systemEndpoints) GetParityAudit(ctx context.Context, r contract.GetParityAuditRequestObject) (contract.GetParityAuditResponseObject, error) {
	ctx = requestContext(ctx)
	rep, err := e.cluster.Parity(ctx, cluster.ParityOptions{ClusterID: deref(r.Params.ClusterId, ""), CheckDatabase: deref(r.Params.CheckDatabase, false)})
	if err != nil {
		return nil, err
	}
	return contract.GetParityAudit200JSONResponse(parityReport(rep, deref(r.Params.IncludePassed, true), deref(r.Params.IncludeDetails, false))), nil
}

func (e *systemEndpoints) GetMigrationAudit(ctx context.Context, r contract.GetMigrationAuditRequestObject) (contract.GetMigrationAuditResponseObject, error) {
	ctx = requestContext(ctx)
	includeSamples := deref(r.Params.IncludeSamples, false)
	samples := 0
	if includeSamples {
		samples = int(deref(r.Params.SampleSize, 10))
	}
	rep, err := e.store.Migration(ctx, storeaudit.MigrationOptions{ClusterID: deref(r.Params.ClusterId, ""), Samples: samples})
	if err != nil {
		return nil, err
	}
	out := contract.MigrationAuditReport{ClusterId: rep.ClusterID, GeneratedAt: rep.GeneratedAt, SchemaVersion: rep.SchemaVersion,
		ExpectedSchemaVersion: rep.ExpectedSchemaVersion, Passed: rep.Passed, Checks: auditChecks(rep.Checks, deref(r.Params.IncludePassed, true), false),
		Residues: residueGroups(rep.Residues, includeSamples)}
	return contract.GetMigrationAudit200JSONResponse(out), nil
}

func (e *systemEndpoints) CleanupRemovedProtocolResidues(
	ctx context.Context,
	r contract.CleanupRemovedProtocolResiduesRequestObject,
) (contract.CleanupRemovedProtocolResiduesResponseObject, error) {
	ctx = requestContext(ctx)
	c, err := e.store.CleanupResidues(ctx, r.Body.Prefixes, deref(r.Body.DryRun, true))
	res := contract.RemovedProtocolResidueCleanupResult{DryRun: c.DryRun, Prefixes: residueGroups(c.Prefixes, false), DeletedKeys: c.DeletedKeys, Revision: c.Revision}
	return contract.CleanupRemovedProtocolResidues200JSONResponse(res), err
}

func (e *systemEndpoints) GetDatabaseSchemaAudit(ctx context.Context, r contract.GetDatabaseSchemaAuditRequestObject) (contract.GetDatabaseSchemaAuditResponseObject, error) {
	ctx = requestContext(ctx)
	sc, err := e.store.Schema(ctx)
	if err != nil {
		return nil, err
	}
	return contract.GetDatabaseSchemaAudit200JSONResponse(schemaAudit(sc, deref(r.Params.IncludeDdl, false), int(deref(r.Params.MaxDdlChars, 4000)))), nil
}

func (e *systemEndpoints) PreviewDataRetentionCleanup(
	ctx context.Context,
	r contract.PreviewDataRetentionCleanupRequestObject,
) (contract.PreviewDataRetentionCleanupResponseObject, error) {
	ctx = requestContext(ctx)
	p, err := e.retention.Preview(ctx, deref(r.Params.Actor, actorOf(ctx)), deref(r.Params.Reason, ""))
	if err != nil {
		return nil, err
	}
	out := contract.DataRetentionCleanupPreview{GeneratedAt: p.GeneratedAt, Actor: p.Actor, Reason: p.Reason, Categories: []contract.RetentionCategory{}}
	for _, c := range p.Categories {
		out.Categories = append(out.Categories, contract.RetentionCategory{Category: c.Name, Policy: c.Policy,
			KeepAfterRevision: c.KeepAfterRevision, EligibleCount: c.EligibleCount, OldestRevision: c.OldestRevision})
	}
	return contract.PreviewDataRetentionCleanup200JSONResponse(out), nil
}

func (e *systemEndpoints) RunDataRetentionCleanup(ctx context.Context, r contract.RunDataRetentionCleanupRequestObject) (contract.RunDataRetentionCleanupResponseObject, error) {
	ctx = requestContext(ctx)
	for _, c := range deref(r.Body.Categories, nil) {
		known := false
		for _, k := range retention.Categories {
			known = known || c == k
		}
		if !known {
			return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "unknown retention category " + c, Retryable: retryable(false)}
		}
	}
	res, err := e.retention.Run(ctx, deref(r.Body.Actor, actorOf(ctx)), r.Body.Reason, deref(r.Body.Categories, nil))
	if err != nil {
		return nil, err
	}
	out := contract.DataRetentionCleanupRunResult{StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Actor: res.Actor, Reason: res.Reason,
		Revision: res.Revision, Categories: []contract.RetentionCategoryResult{}}
	for _, c := range res.Categories {
		out.Categories = append(out.Categories, contract.RetentionCategoryResult{Category: c.Category, DeletedCount: c.Deleted})
	}
	return contract.RunDataRetentionCleanup200JSONResponse(out), nil
}

func (e *systemEndpoints) GetApiDocs(_ context.Context, _ contract.GetApiDocsRequestObject) (contract.GetApiDocsResponseObject, error) {
	return contract.GetApiDocs302Response{Headers: contract.GetApiDocs302ResponseHeaders{Location: "/api/v2/system/docs-ui"}}, nil
}

func (e *systemEndpoints) GetDocsUi(_ context.Context, r contract.GetDocsUiRequestObject) (contract.GetDocsUiResponseObject, error) {
	if r.Params.Format != nil && *r.Params.Format == contract.GetDocsUiParamsFormatYaml {
		return contract.GetDocsUi200ApplicationyamlResponse{Body: bytes.NewReader(e.yaml), ContentLength: int64(len(e.yaml))}, nil
	}
	return contract.GetDocsUi200TexthtmlResponse{Body: bytes.NewReader(e.docs), ContentLength: int64(len(e.docs))}, nil
}

func (e *systemEndpoints) GetClusterStatus(ctx context.Context, r contract.GetClusterStatusRequestObject) (contract.GetClusterStatusResponseObject, error) {
	ctx = requestContext(ctx)
	cs, err := e.cluster.Status(ctx, deref(r.Params.ClusterId, ""))
	if err != nil {
		return nil, err
	}
	st := clusterStatus(cs)
	if e.nodes != nil {
		st.MediaHosts, err = mediaHosts(ctx, e.nodes)
	}
	return contract.GetClusterStatus200JSONResponse(st), err
}

// healthSnapshot maps this node's health; the details only for those who
// may see them.
func healthSnapshot(h cluster.Health, withDetails bool) contract.SvcHealthSnapshot {
	snap := contract.SvcHealthSnapshot{Status: contract.SvcHealthSnapshotStatus(h.Status), Version: h.Version}
	if withDetails {
		checks := make([]contract.HealthCheck, 0, len(h.Checks))
		for _, c := range h.Checks {
			checks = append(checks, contract.HealthCheck{Name: c.Name, Status: contract.HealthCheckStatus(c.Status), Message: c.Message})
		}
		snap.Details = &contract.SvcHealthDetails{
			NodeId: h.NodeID, ClusterId: h.ClusterID, RaftState: contract.SvcHealthDetailsRaftState(h.RaftState), LeaderId: h.LeaderID,
			AppliedIndex: h.AppliedIndex, Revision: h.Revision, Checks: checks,
		}
	}
	return snap
}

func readinessReport(r cluster.Readiness) contract.ReadinessReport {
	out := contract.ReadinessReport{NodeId: r.NodeID, CheckedAt: r.CheckedAt, Ready: r.Ready}
	for _, c := range r.Checks {
		out.Checks = append(out.Checks, contract.ReadinessCheck{Name: c.Name, Ok: c.OK, Skipped: c.Skipped, DurationMs: c.Duration.Milliseconds(), Message: c.Message})
	}
	return out
}

// parityReport maps the parity audit, leaving out the passed checks and
// the members' details unless asked for.
func parityReport(p cluster.Parity, includePassed, includeDetails bool) contract.ParityAuditReport {
	out := contract.ParityAuditReport{ClusterId: p.ClusterID, GeneratedAt: p.GeneratedAt, ComparedRevision: p.ComparedRevision, Passed: p.Passed,
		Checks: auditChecks(p.Checks, includePassed, true)}
	if includeDetails {
		members := make([]contract.ParityMemberDetail, 0, len(p.Members))
		for _, m := range p.Members {
			members = append(members, contract.ParityMemberDetail{NodeId: m.NodeID, Reachable: m.Reachable, Version: m.Version,
				SchemaVersion: int32(m.SchemaVersion), AppliedRevision: m.AppliedRevision, StateHash: m.StateHash, DatabaseIntegrity: m.DatabaseIntegrity})
		}
		out.Members = &members
	}
	return out
}

func clusterStatus(s cluster.Status) contract.ClusterStatus {
	out := contract.ClusterStatus{ClusterId: s.ClusterID, LeaderId: s.LeaderID, Term: s.Term, AppliedIndex: s.AppliedIndex,
		CommitIndex: s.CommitIndex, Revision: s.Revision, Members: []contract.ClusterMember{}}
	for _, m := range s.Members {
		h := m.Health
		out.Members = append(out.Members, contract.ClusterMember{
			NodeId: m.NodeID, RaftAddress: m.RaftAddress, HttpAddress: m.HTTPAddress,
			Suffrage: contract.ClusterMemberSuffrage(m.Suffrage), Leader: m.Leader, Self: m.Self,
			Health: contract.ClusterMemberHealth{Status: contract.ClusterMemberHealthStatus(h.Status), Message: h.Message, Reachable: h.Reachable,
				AppliedIndex: h.AppliedIndex, LagEntries: h.LagEntries, LastContactMs: h.LastContactMs, Version: h.Version},
		})
	}
	return out
}

// auditChecks maps an audit's checks, leaving out the passed ones unless
// asked for; withNode names the member each check is about.
func auditChecks(checks []cluster.AuditCheck, includePassed, withNode bool) []contract.AuditCheck {
	out := []contract.AuditCheck{}
	for _, c := range checks {
		if c.Passed && !includePassed {
			continue
		}
		ac := contract.AuditCheck{Name: c.Name, Passed: c.Passed, Severity: contract.AuditCheckSeverity(c.Severity), Message: c.Message}
		if withNode {
			ac.NodeId = &c.NodeID
		}
		out = append(out, ac)
	}
	return out
}

func residueGroups(groups []storeaudit.ResidueGroup, withSamples bool) []contract.ResidueGroup {
	out := []contract.ResidueGroup{}
	for _, g := range groups {
		rg := contract.ResidueGroup{Prefix: g.Prefix, KeyCount: g.KeyCount}
		if withSamples {
			keys := append([]string{}, g.SampleKeys...)
			rg.SampleKeys = &keys
		}
		out = append(out, rg)
	}
	return out
}

// schemaAudit maps the database's schema, with each object's DDL cut to
// maxDDL characters when asked for.
func schemaAudit(sc storeaudit.Schema, includeDDL bool, maxDDL int) contract.DatabaseSchemaAudit {
	out := contract.DatabaseSchemaAudit{Engine: sc.Engine, SchemaVersion: sc.SchemaVersion, SizeBytes: sc.SizeBytes,
		PageSizeBytes: sc.PageSize, Integrity: sc.Integrity, Objects: []contract.SchemaObject{}}
	for _, so := range sc.Objects {
		o := contract.SchemaObject{Name: so.Name, Type: contract.SchemaObjectType(so.Type), TableName: so.Table, RowCount: so.RowCount,
			Columns: []contract.SchemaColumn{}}
		for _, c := range so.Columns {
			o.Columns = append(o.Columns, contract.SchemaColumn{Name: c.Name, Type: c.Type, NotNull: c.NotNull, PrimaryKey: c.PrimaryKey})
		}
		if includeDDL {
			ddl := so.DDL
			if len(ddl) > maxDDL {
				ddl, o.DdlTruncated = ddl[:maxDDL], true
			}
			o.Ddl = &ddl
		}
		out.Objects = append(out.Objects, o)
	}
	return out
}
