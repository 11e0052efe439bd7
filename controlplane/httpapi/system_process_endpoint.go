package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/controlplane/system"
)

// The "System and health" operations about this process: its build,
// roles, runtime figures, ports, the console's overview and the
// operations e-mail test. Each decodes, calls system.Service and maps.

func (e *systemEndpoints) GetSystemInfo(ctx context.Context, _ contract.GetSystemInfoRequestObject) (contract.GetSystemInfoResponseObject, error) {
	ctx = requestContext(ctx)
	in := e.svc.Info(ctx)
	return contract.GetSystemInfo200JSONResponse(contract.SystemInfo{
		Product: in.Product, Version: in.Version, Commit: in.Commit, GoVersion: in.GoVersion, NodeId: in.NodeID, ClusterId: in.ClusterID,
		Hostname: in.Hostname, Os: in.OS, Arch: in.Arch, StartedAt: in.StartedAt, UptimeSeconds: int64(in.Uptime.Seconds()), Roles: in.Roles,
	}), nil
}

func (e *systemEndpoints) GetSystemVersion(_ context.Context, _ contract.GetSystemVersionRequestObject) (contract.GetSystemVersionResponseObject, error) {
	v := e.svc.Version()
	return contract.GetSystemVersion200JSONResponse(contract.SystemVersion{
		Version: v.Version, ContractVersion: v.ContractVersion, Commit: v.Commit, BuildDate: v.BuildDate, GoVersion: v.GoVersion,
		StoreSchemaVersion: int32(v.StoreSchemaVersion),
	}), nil
}

func (e *systemEndpoints) ListSystemRoles(_ context.Context, _ contract.ListSystemRolesRequestObject) (contract.ListSystemRolesResponseObject, error) {
	out := contract.SystemRoleList{NodeId: e.svc.NodeID(), Roles: []contract.ProcessRole{}}
	for _, r := range e.svc.Roles() {
		out.Roles = append(out.Roles, contract.ProcessRole{Role: r.Name, Enabled: r.Enabled, LeaderOnly: r.LeaderOnly, Active: r.Active, Description: r.Description})
	}
	return contract.ListSystemRoles200JSONResponse(out), nil
}

func (e *systemEndpoints) GetConsoleSummary(ctx context.Context, _ contract.GetConsoleSummaryRequestObject) (contract.GetConsoleSummaryResponseObject, error) {
	ctx = requestContext(ctx)
	s, err := e.svc.ConsoleSummary(ctx)
	if err != nil {
		return nil, err
	}
	return contract.GetConsoleSummary200JSONResponse(contract.ConsoleSummary{
		ClusterId: s.ClusterID, GeneratedAt: s.GeneratedAt, Warnings: s.Warnings,
		Cluster: contract.ConsoleClusterSummary{Members: int32(s.Members), HealthyMembers: int32(s.HealthyMembers), LeaderId: s.LeaderID, Revision: s.Revision},
		Counts:  contract.ConsoleCounts{Users: s.Users, ApiTokens: s.APITokens, Channels: s.Channels, MediaServers: s.MediaServers, Nodes: s.Nodes},
	}), nil
}

func (e *systemEndpoints) GetRuntimeDiagnostics(_ context.Context, _ contract.GetRuntimeDiagnosticsRequestObject) (contract.GetRuntimeDiagnosticsResponseObject, error) {
	return contract.GetRuntimeDiagnostics200JSONResponse(runtimeDiagnostics(e.svc.Diagnostics())), nil
}

func runtimeDiagnostics(d system.Diagnostics) contract.RuntimeDiagnostics {
	m, r, s := d.Memory, d.Raft, d.Store
	return contract.RuntimeDiagnostics{
		NodeId: d.NodeID, GeneratedAt: d.GeneratedAt, GoVersion: d.GoVersion,
		Gomaxprocs: int32(d.GOMAXPROCS), Goroutines: int32(d.Goroutines), OpenFileDescriptors: int32(d.OpenFileDescriptors),
		Memory: contract.RuntimeMemory{HeapAllocBytes: int64(m.HeapAllocBytes), HeapSysBytes: int64(m.HeapSysBytes), SysBytes: int64(m.SysBytes),
			NumGc: int64(m.NumGC), GcPauseTotalNs: m.GCPauseTotal.Nanoseconds(), GcPercent: int32(m.GCPercent)},
		Raft: contract.RaftDiagnostics{State: r.State, Term: int64(r.Term), LastLogIndex: int64(r.LastLogIndex), CommitIndex: int64(r.CommitIndex),
			AppliedIndex: int64(r.AppliedIndex), LastSnapshotIndex: r.LastSnapshotIndex, LeaderId: r.LeaderID, NumPeers: int32(r.NumPeers),
			LastContactMs: r.LastContact.Milliseconds()},
		Store: contract.StoreDiagnostics{Revision: s.Revision, CompactedRevision: s.CompactedRevision, DatabaseSizeBytes: s.DatabaseSizeBytes,
			WalSizeBytes: s.WALSizeBytes, Watchers: int32(s.Watchers)},
	}
}

func (e *systemEndpoints) ListRuntimePorts(_ context.Context, _ contract.ListRuntimePortsRequestObject) (contract.ListRuntimePortsResponseObject, error) {
	out := contract.RuntimePortList{NodeId: e.svc.NodeID(), Rows: []contract.RuntimePort{}}
	for _, p := range e.svc.Ports() {
		out.Rows = append(out.Rows, contract.RuntimePort{Module: p.Module, Protocol: contract.RuntimePortProtocol(p.Protocol), Address: p.Host,
			Port: int32(p.Port), PortEnd: int32(p.PortEnd), Enabled: p.Enabled, Listening: p.Listening, Message: p.Message})
	}
	return contract.ListRuntimePorts200JSONResponse(out), nil
}

func (e *systemEndpoints) SendTestEmail(ctx context.Context, r contract.SendTestEmailRequestObject) (contract.SendTestEmailResponseObject, error) {
	ctx = requestContext(ctx)
	for _, l := range []struct {
		lim *ratelimit.Limiter
		key string
	}{{e.emails, identity.From(ctx).CredentialID}, {e.emailsAll, "node"}} {
		if ok, wait := l.lim.Allow(l.key); !ok {
			return nil, rateLimited(wait)
		}
	}
	res, err := e.svc.SendTestEmail(string(r.Body.To), deref(r.Body.Subject, ""), actorOf(ctx))
	if err != nil {
		return nil, err
	}
	return contract.SendTestEmail200JSONResponse(contract.SystemEmailTestResult{Sent: res.Sent, Server: res.Server,
		DurationMs: res.Duration.Milliseconds(), MessageId: res.MessageID}), nil
}
