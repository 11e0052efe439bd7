package httpapi

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/monitoring"
)

// monitoring builds the cluster view; history only when a window is given.
func (e *nodesEndpoints) monitoring(
	ctx context.Context,
	clusterID *string,
	minutes int,
	nodeID string,
	start, end *time.Time,
	bucketSeconds int,
) (contract.ClusterMonitoring, error) {
	id, err := e.checkCluster(ctx, clusterID)
	if err != nil {
		return contract.ClusterMonitoring{}, err
	}
	if start != nil && end != nil && !start.Before(*end) {
		return contract.ClusterMonitoring{}, &Error{
			Status:    http.StatusBadRequest,
			Code:      "invalid_query",
			Message:   "historyStart must be before historyEnd",
			Retryable: retryable(false),
		}
	}
	views, err := e.view(ctx)
	if err != nil {
		return contract.ClusterMonitoring{}, err
	}
	now := time.Now().UTC()
	out := contract.ClusterMonitoring{ClusterId: id, GeneratedAt: now, AnsweredBy: e.monitor.NodeID, Nodes: []contract.NodeMonitoring{},
		History: []contract.NodeMonitoringHistory{}}
	for _, v := range views {
		nm := contract.NodeMonitoring{NodeId: v.NodeID, Kind: contract.NodeMonitoringKind(v.Kind), Status: contract.NodeMonitoringStatus(v.Status),
			LastHeartbeatAt: v.ReceivedAt, HeartbeatAgeSeconds: -1}
		if v.Heartbeat != nil {
			nm.HeartbeatAgeSeconds = now.Sub(*v.ReceivedAt).Seconds()
			h := toHostMetrics(v.Heartbeat.Host)
			nm.Host = &h
		}
		if v.Record != nil {
			es := toEngineState(v.Record, v.Heartbeat, v.ReceivedAt)
			nm.Engine = &es
		}
		out.Nodes = append(out.Nodes, nm)
	}
	from, to, bucket, ok := monitoring.HistoryWindow(minutes, start, end, bucketSeconds, now)
	if !ok {
		return out, nil
	}
	out.HistoryStart, out.HistoryEnd, out.HistoryBucketSeconds = &from, &to, int32(bucket/time.Second)
	for _, v := range views {
		if nodeID != "" && v.NodeID != nodeID {
			continue
		}
		h := contract.NodeMonitoringHistory{NodeId: v.NodeID, Points: []contract.MonitoringPoint{}}
		for _, b := range e.presence.History(v.NodeID, from, to, bucket) {
			s := b.Sample
			h.Points = append(h.Points, contract.MonitoringPoint{At: b.Start, Samples: int32(b.Samples), CpuPercent: round2(s.CPUPercent), MemPercent: round2(s.MemPercent),
				MemUsedBytes: int64(s.MemUsedBytes), Load1: round2(s.Load1), RecvBitsPerSecond: round2(s.RecvBps), SentBitsPerSecond: round2(s.SentBps),
				DiskUsedPercent: s.DiskUsedPercent, EngineCpuPercent: round2(s.EngineCPUPercent), EngineRssBytes: int64(s.EngineRSSBytes),
				EngineRunning: s.EngineRunning, EngineStreams: int32(s.EngineStreams), EnginePlayers: int32(s.EnginePlayers), ActiveRtpLeases: int32(s.ActiveRTPLeases)})
		}
		out.History = append(out.History, h)
	}
	return out, nil
}

func (e *nodesEndpoints) GetClusterMonitoring(ctx context.Context, r contract.GetClusterMonitoringRequestObject) (contract.GetClusterMonitoringResponseObject, error) {
	ctx = requestContext(ctx)
	p := r.Params
	out, err := e.monitoring(ctx, p.ClusterId, int(deref(p.HistoryMinutes, 0)), deref(p.HistoryNodeId, ""), p.HistoryStart, p.HistoryEnd, int(deref(p.HistoryBucketSeconds, 0)))
	if err != nil {
		return nil, err
	}
	return contract.GetClusterMonitoring200JSONResponse(out), nil
}

func (e *nodesEndpoints) GetClusterMonitoringCurrent(
	ctx context.Context,
	r contract.GetClusterMonitoringCurrentRequestObject,
) (contract.GetClusterMonitoringCurrentResponseObject, error) {
	ctx = requestContext(ctx)
	out, err := e.monitoring(ctx, r.Params.ClusterId, 0, "", nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return contract.GetClusterMonitoringCurrent200JSONResponse(out), nil
}

func (e *nodesEndpoints) GetLocalRuntime(ctx context.Context, _ contract.GetLocalRuntimeRequestObject) (contract.GetLocalRuntimeResponseObject, error) {
	ctx = requestContext(ctx)
	rt := e.monitor.LocalRuntime(ctx)
	return contract.GetLocalRuntime200JSONResponse{NodeId: e.monitor.NodeID, Pid: int32(rt.PID), StartedAt: rt.StartedAt, UptimeSeconds: int64(rt.Uptime / time.Second),
		Goroutines: int32(rt.Goroutines), HeapAllocBytes: int64(rt.HeapAlloc), HeapSysBytes: int64(rt.HeapSys), RssBytes: int64(rt.RSS),
		CpuPercent: rt.CPUPercent, OpenFiles: int32(rt.OpenFiles), GcCycles: int64(rt.GCCycles), NumCpu: int32(rt.NumCPU), GoVersion: rt.GoVersion}, nil
}

// round2 keeps two decimals of a mean, which is all the figures carry.
func round2(v float64) float64 { return math.Round(v*100) / 100 }
