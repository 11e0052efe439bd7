package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/monitoring"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/shared/agentapi"
)

// nodesEndpoints serves the node list, media servers, their references and
// retirement, and cluster monitoring (module 03).
type nodesEndpoints struct {
	nodes    *nodes.Service
	presence *nodes.Presence
	servers  *mediaserver.Service
	monitor  *monitoring.Monitor
	node     *raftnode.Node
	system   *system.Service
	ttl      time.Duration
}

// checkCluster refuses a clusterId that is not this cluster's.
func (e *nodesEndpoints) checkCluster(ctx context.Context, id *string) (string, error) {
	own := e.system.ClusterID(ctx)
	if id != nil && *id != "" && *id != own {
		return "", &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("unknown cluster id %q", *id), Retryable: retryable(false)}
	}
	return own, nil
}

// view lists every node as monitoring sees it.
func (e *nodesEndpoints) view(ctx context.Context) ([]monitoring.NodeView, error) {
	members, err := e.node.Members(ctx)
	if err != nil {
		return nil, err
	}
	ms := make([]monitoring.Member, 0, len(members))
	for _, m := range members {
		ms = append(ms, monitoring.Member{NodeID: m.NodeID, Address: m.HTTPAddress, Leader: m.Leader})
	}
	recs, err := e.nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	return monitoring.View(e.presence, ms, recs, e.ttl), nil
}

func (e *nodesEndpoints) ListNodes(ctx context.Context, _ contract.ListNodesRequestObject) (contract.ListNodesResponseObject, error) {
	ctx = requestContext(ctx)
	views, err := e.view(ctx)
	if err != nil {
		return nil, err
	}
	out := contract.ListNodes200JSONResponse{Rows: []contract.Node{}}
	for _, v := range views {
		out.Rows = append(out.Rows, contract.Node{NodeId: v.NodeID, Kind: contract.NodeKind(v.Kind), Status: contract.NodeStatus(v.Status),
			Address: v.Address, Version: v.Version, Leader: v.Leader, MediaServerId: v.MediaServerID, LastHeartbeatAt: v.ReceivedAt})
	}
	return out, nil
}

func (e *nodesEndpoints) TriggerSelfHeartbeat(ctx context.Context, _ contract.TriggerSelfHeartbeatRequestObject) (contract.TriggerSelfHeartbeatResponseObject, error) {
	ctx = requestContext(ctx)
	hb, n := e.monitor.Beat(ctx)
	return contract.TriggerSelfHeartbeat200JSONResponse{NodeId: e.monitor.NodeID, SentAt: hb.SentAt, ForwardedTo: int32(n), Host: toHostMetrics(hb.Host)}, nil
}

func toHostMetrics(h agentapi.HostMetrics) contract.HostMetrics {
	out := contract.HostMetrics{CpuPercent: h.CPUPercent, CpuCores: int32(h.CPUCores), MemTotalBytes: int64(h.MemTotalBytes), MemUsedBytes: int64(h.MemUsedBytes),
		MemPercent: h.MemPercent, Load1: h.Load1, Load5: h.Load5, Load15: h.Load15, UptimeSeconds: int64(h.UptimeSeconds),
		Disks: []contract.DiskMetrics{}, Interfaces: []contract.InterfaceMetrics{}}
	for _, d := range h.Disks {
		out.Disks = append(out.Disks, contract.DiskMetrics{Path: d.Path, Device: d.Device, FsType: d.FSType, TotalBytes: int64(d.TotalBytes),
			UsedBytes: int64(d.UsedBytes), FreeBytes: int64(d.FreeBytes), UsedPercent: d.UsedPercent})
	}
	for _, i := range h.Interfaces {
		out.Interfaces = append(out.Interfaces, contract.InterfaceMetrics{Name: i.Name, BytesRecv: int64(i.BytesRecv), BytesSent: int64(i.BytesSent),
			RecvBitsPerSecond: i.RecvBps, SentBitsPerSecond: i.SentBps, PacketsRecv: int64(i.PacketsRecv), PacketsSent: int64(i.PacketsSent),
			ErrorsIn: int64(i.ErrorsIn), ErrorsOut: int64(i.ErrorsOut), DropsIn: int64(i.DropsIn), DropsOut: int64(i.DropsOut)})
	}
	return out
}

// toEngineState renders the engine of a node from its record and its
// agent's latest heartbeat.
func toEngineState(r *nodes.Record, hb *agentapi.Heartbeat, at *time.Time) contract.EngineProcessState {
	st := contract.EngineProcessState{NodeId: r.NodeID, MediaServerId: r.MediaServerID, Status: contract.EngineProcessStateStatusUnknown,
		AgentStatus: contract.EngineProcessStateAgentStatus(r.Status), Pid: int32(r.Engine.PID), Version: r.Engine.Version, LastAction: r.Engine.LastAction,
		ControlAddr: r.Engine.ControlAddr, HttpAddr: r.Engine.HTTPAddr, RtspAddr: r.Engine.RTSPAddr, RtpPortMin: int32(r.Engine.RTPPortMin), RtpPortMax: int32(r.Engine.RTPPortMax)}
	if r.Engine.Process != "" {
		st.Status = contract.EngineProcessStateStatus(r.Engine.Process)
	}
	if hb != nil {
		e := hb.Engine
		st.Status, st.Pid, st.StartedAt, st.Restarts, st.LastAction, st.LastError = contract.EngineProcessStateStatus(
			e.Status,
		), int32(
			e.PID,
		), e.StartedAt, int32(
			e.Restarts,
		), e.LastAction, e.LastError
		st.NextStartAt, st.RssBytes, st.CpuPercent, st.Streams, st.Players = e.NextStartAt, int64(e.RSSBytes), e.CPUPercent, int32(e.Streams), int32(e.Players)
		st.ConfigPath, st.ReportedAt = e.ConfigPath, at
		if e.ControlAddr != "" {
			st.ControlAddr, st.HttpAddr, st.RtspAddr, st.RtpPortMin, st.RtpPortMax = e.ControlAddr, e.HTTPAddr, e.RTSPAddr, int32(e.RTPPortMin), int32(e.RTPPortMax)
		}
		if e.Version != "" {
			st.Version = e.Version
		}
		// A transition the heartbeat had not seen yet is the newer news.
		if r.Engine.Process != "" && r.Engine.BootID == e.SupervisorBootID && r.Engine.Seq > e.TransitionSeq {
			st.Status, st.Pid = contract.EngineProcessStateStatus(r.Engine.Process), int32(r.Engine.PID)
		}
	}
	return st
}

// mediaStatus is a media server's lifecycle status.
func mediaStatus(r *nodes.Record) string {
	switch {
	case r.Status == nodes.StatusRetired:
		return nodes.StatusRetired
	case r.Status == nodes.StatusOnline && r.Engine.Media == nodes.MediaOnline:
		return nodes.MediaOnline
	}
	return nodes.MediaOffline
}

func (e *nodesEndpoints) ListMediaServers(ctx context.Context, r contract.ListMediaServersRequestObject) (contract.ListMediaServersResponseObject, error) {
	ctx = requestContext(ctx)
	if _, err := e.checkCluster(ctx, r.Params.ClusterId); err != nil {
		return nil, err
	}
	recs, err := e.nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := contract.ListMediaServers200JSONResponse{Rows: []contract.MediaServer{}}
	for _, rec := range recs {
		if rec.Status == nodes.StatusPending {
			continue
		}
		var hbp *agentapi.Heartbeat
		var atp *time.Time
		if hb, at, ok := e.presence.Last(rec.NodeID); ok {
			hbp, atp = &hb, &at
		}
		es := toEngineState(rec, hbp, atp)
		out.Rows = append(out.Rows, contract.MediaServer{MediaServerId: rec.MediaServerID, NodeId: rec.NodeID, Status: contract.MediaServerStatus(mediaStatus(rec)),
			AgentStatus: contract.MediaServerAgentStatus(rec.Status), EngineStatus: contract.MediaServerEngineStatus(es.Status), Version: es.Version,
			LastHeartbeatAt: atp, HttpAddr: es.HttpAddr, RtspAddr: es.RtspAddr, RtpPortMin: es.RtpPortMin, RtpPortMax: es.RtpPortMax,
			Streams: es.Streams, Players: es.Players, RetiredAt: rec.RetiredAt})
	}
	return out, nil
}

func toReferences(refs mediaserver.References) contract.MediaServerReferences {
	out := contract.MediaServerReferences{MediaServerId: refs.Node.MediaServerID, NodeId: refs.Node.NodeID, Total: int32(refs.Total),
		CanRetire: !refs.Blocking(), Message: refs.Message(), Groups: []contract.MediaServerReferenceGroup{}}
	for _, g := range refs.Groups {
		out.Groups = append(out.Groups, contract.MediaServerReferenceGroup{Kind: contract.MediaServerReferenceGroupKind(g.Kind), Count: int32(g.Count),
			Samples: g.Samples, Blocking: g.Blocking})
	}
	return out
}

func (e *nodesEndpoints) GetMediaServerReferences(ctx context.Context, r contract.GetMediaServerReferencesRequestObject) (contract.GetMediaServerReferencesResponseObject, error) {
	ctx = requestContext(ctx)
	if _, err := e.checkCluster(ctx, r.Params.ClusterId); err != nil {
		return nil, err
	}
	refs, err := e.servers.References(ctx, r.MediaServerId, int(deref(r.Params.SampleSize, 10)))
	if err != nil {
		return nil, err
	}
	return contract.GetMediaServerReferences200JSONResponse(toReferences(refs)), nil
}

func (e *nodesEndpoints) RetireMediaServer(ctx context.Context, r contract.RetireMediaServerRequestObject) (contract.RetireMediaServerResponseObject, error) {
	ctx = requestContext(ctx)
	if _, err := e.checkCluster(ctx, r.Params.ClusterId); err != nil {
		return nil, err
	}
	preview := deref(r.Body.Preview, true)
	res, err := e.servers.Retire(ctx, auditActor(ctx), r.MediaServerId, preview, deref(r.Body.Force, false), deref(r.Body.Reason, ""))
	if err != nil && (!res.Retired || errors.Is(err, nodes.ErrRetired)) {
		return nil, err
	}
	out := contract.RetireMediaServer200JSONResponse{MediaServerId: res.References.Node.MediaServerID, NodeId: res.References.Node.NodeID, Preview: preview,
		Retired: res.Retired, CanceledCommands: int32(res.CanceledCommands), References: toReferences(res.References), Message: res.Message}
	if err != nil {
		out.Message += "; " + err.Error()
	}
	return out, nil
}
