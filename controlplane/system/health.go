package system

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/shared/buildinfo"
)

// Health is the public snapshot; details only when withDetails.
func (s *Service) Health(ctx context.Context, withDetails bool) contract.SvcHealthSnapshot {
	n := s.d.Node
	_, leaderID := n.Raft().LeaderWithID()
	var checks []contract.HealthCheck
	status := contract.SvcHealthSnapshotStatusOk
	if leaderID == "" {
		status = contract.SvcHealthSnapshotStatusUnavailable
		checks = append(checks, contract.HealthCheck{Name: "leader", Status: contract.HealthCheckStatusUnavailable, Message: "no leader is known; writes are not possible"})
	} else {
		checks = append(checks, contract.HealthCheck{Name: "leader", Status: contract.HealthCheckStatusOk, Message: "leader " + string(leaderID)})
	}
	lag := int64(n.Raft().CommitIndex()) - int64(n.State().AppliedIndex())
	switch {
	case lag > 10000:
		if status == contract.SvcHealthSnapshotStatusOk {
			status = contract.SvcHealthSnapshotStatusDegraded
		}
		checks = append(checks, contract.HealthCheck{Name: "apply-lag", Status: contract.HealthCheckStatusDegraded, Message: fmt.Sprintf("%d committed entries not yet applied", lag)})
	default:
		checks = append(checks, contract.HealthCheck{Name: "apply-lag", Status: contract.HealthCheckStatusOk, Message: fmt.Sprintf("%d entries behind commit", max(lag, 0))})
	}
	for _, c := range storeChecks(n) {
		if c.Status != contract.HealthCheckStatusOk && status == contract.SvcHealthSnapshotStatusOk {
			status = contract.SvcHealthSnapshotStatusDegraded
		}
		checks = append(checks, c)
	}
	snap := contract.SvcHealthSnapshot{Status: status, Version: buildinfo.Version}
	if withDetails {
		snap.Details = &contract.SvcHealthDetails{
			NodeId: s.d.NodeID, ClusterId: s.ClusterID(ctx),
			RaftState:    contract.SvcHealthDetailsRaftState(n.Raft().State().String()),
			LeaderId:     string(leaderID),
			AppliedIndex: int64(n.State().AppliedIndex()), Revision: n.Revision(),
			Checks: checks,
		}
	}
	return snap
}

// storeChecks report what keeps this node's store from taking writes: the
// data directory's free space against its reserve, and an apply halted by
// a local failure (such as a full disk).
func storeChecks(n *raftnode.Node) []contract.HealthCheck {
	st := n.Storage()
	disk := contract.HealthCheck{Name: "storage", Status: contract.HealthCheckStatusOk,
		Message: fmt.Sprintf("%s free of %s in %s; writes are refused below %s", mib(st.FreeBytes), mib(st.TotalBytes), st.Dir, mib(st.ReserveBytes))}
	if st.Full {
		disk.Status = contract.HealthCheckStatusDegraded
		disk.Message = fmt.Sprintf("storage_full: %s free in %s, below the reserve of %s; this node refuses writes until space is freed, reads go on",
			mib(st.FreeBytes), st.Dir, mib(st.ReserveBytes))
	}
	apply := contract.HealthCheck{Name: "apply", Status: contract.HealthCheckStatusOk, Message: "applying committed entries"}
	if since, err := n.ApplyStalled(); err != nil {
		apply.Status = contract.HealthCheckStatusDegraded
		apply.Message = fmt.Sprintf("applying is halted since %s by a local failure and retried (nothing is skipped): %v",
			since.UTC().Format(time.RFC3339), err)
	}
	return []contract.HealthCheck{disk, apply}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Info describes this process.
func (s *Service) Info(ctx context.Context) contract.SystemInfo {
	host, _ := os.Hostname()
	return contract.SystemInfo{
		Product: "svc streaming platform", Version: buildinfo.Version, Commit: buildinfo.Commit,
		GoVersion: buildinfo.GoVersion(), NodeId: s.d.NodeID, ClusterId: s.ClusterID(ctx),
		Hostname: host, Os: runtime.GOOS, Arch: runtime.GOARCH,
		StartedAt: s.d.StartedAt.UTC(), UptimeSeconds: int64(time.Since(s.d.StartedAt).Seconds()),
		Roles: s.activeRoleNames(),
	}
}

// Version reports build and contract versions.
func (s *Service) Version() contract.SystemVersion {
	return contract.SystemVersion{
		Version: buildinfo.Version, ContractVersion: buildinfo.ContractVersion, Commit: buildinfo.Commit,
		BuildDate: buildinfo.BuildDate, GoVersion: buildinfo.GoVersion(), StoreSchemaVersion: sqlitefsm.SchemaVersion,
	}
}

func (s *Service) roles() []contract.ProcessRole {
	leader := s.d.Node.Leadership().IsLeader()
	voter := false
	if cf := s.d.Node.Raft().GetConfiguration(); cf.Error() == nil {
		for _, srv := range cf.Configuration().Servers {
			if string(srv.ID) == s.d.NodeID && srv.Suffrage == raft.Voter {
				voter = true
			}
		}
	}
	return []contract.ProcessRole{
		{Role: "control-plane", Enabled: true, Active: true, Description: "HTTP API and domain services over the replicated store"},
		{Role: "raft-voter", Enabled: voter, Active: voter, Description: "votes in leader elections and stores the replicated log"},
		{Role: "background-leader", Enabled: true, LeaderOnly: true, Active: leader, Description: "runs leader-only background tasks such as history retention"},
	}
}

func (s *Service) activeRoleNames() []string {
	var out []string
	for _, r := range s.roles() {
		if r.Active {
			out = append(out, r.Role)
		}
	}
	return out
}

// Roles lists the process roles of this node.
func (s *Service) Roles() contract.SystemRoleList {
	return contract.SystemRoleList{NodeId: s.d.NodeID, Roles: s.roles()}
}

// ConsoleSummary is the overview the console shows first.
func (s *Service) ConsoleSummary(ctx context.Context) (contract.ConsoleSummary, error) {
	st, err := s.ClusterStatus(ctx, nil)
	if err != nil {
		return contract.ConsoleSummary{}, err
	}
	out := contract.ConsoleSummary{ClusterId: st.ClusterId, GeneratedAt: time.Now().UTC(), Warnings: []string{}}
	out.Cluster = contract.ConsoleClusterSummary{Members: int32(len(st.Members)), LeaderId: st.LeaderId, Revision: st.Revision}
	for _, m := range st.Members {
		if m.Health.Status == contract.ClusterMemberHealthStatusOk {
			out.Cluster.HealthyMembers++
		} else {
			out.Warnings = append(out.Warnings, fmt.Sprintf("member %s is %s: %s", m.NodeId, m.Health.Status, m.Health.Message))
		}
	}
	if st.LeaderId == "" {
		out.Warnings = append(out.Warnings, "the cluster has no leader")
	}
	if len(st.Members)%2 == 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d voters: an even number tolerates no more failures than one fewer", len(st.Members)))
	}
	counts := []struct {
		prefix string
		dst    *int64
	}{
		{"/security/users/", &out.Counts.Users}, {"/security/api-tokens/", &out.Counts.ApiTokens},
		{"/channels/", &out.Counts.Channels}, {"/media-servers/", &out.Counts.MediaServers}, {"/nodes/", &out.Counts.Nodes},
	}
	for _, c := range counts {
		r, err := s.d.Node.Range(ctx, c.prefix, store.RangeOptions{End: store.PrefixEnd(c.prefix), CountOnly: true})
		if err != nil {
			return out, err
		}
		*c.dst = r.Count
	}
	return out, nil
}

// readinessKey is where the database round trip writes.
func readinessKey(nodeID string) string { return retention.ReadinessPrefix + nodeID }

// Readiness checks what an operator asked for; the database check writes
// through raft and reads the value back linearizably.
func (s *Service) Readiness(ctx context.Context, checkDatabase, checkEngine bool) contract.ReadinessReport {
	rep := contract.ReadinessReport{NodeId: s.d.NodeID, CheckedAt: time.Now().UTC(), Ready: true}
	add := func(c contract.ReadinessCheck) {
		rep.Checks = append(rep.Checks, c)
		if !c.Ok && !c.Skipped {
			rep.Ready = false
		}
	}
	start := time.Now()
	_, leaderID := s.d.Node.Raft().LeaderWithID()
	add(contract.ReadinessCheck{Name: "leader", Ok: leaderID != "", DurationMs: time.Since(start).Milliseconds(),
		Message: map[bool]string{true: "leader " + string(leaderID), false: "no leader is known"}[leaderID != ""]})

	start = time.Now()
	for _, c := range storeChecks(s.d.Node) {
		add(contract.ReadinessCheck{Name: c.Name, Ok: c.Status == contract.HealthCheckStatusOk, DurationMs: time.Since(start).Milliseconds(), Message: c.Message})
	}

	if checkDatabase {
		start = time.Now()
		c := contract.ReadinessCheck{Name: "database"}
		var nonce [8]byte
		rand.Read(nonce[:])
		val, _ := json.Marshal(map[string]string{"nonce": hex.EncodeToString(nonce[:]), "checkedAt": rep.CheckedAt.Format(time.RFC3339Nano)})
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.d.Node.Txn(cctx, store.TxnRequest{Then: []store.Op{store.Put(readinessKey(s.d.NodeID), val)}})
		if err == nil {
			var kv *store.KeyValue
			kv, _, err = store.Get(cctx, s.d.Node, readinessKey(s.d.NodeID), store.Linearizable)
			if err == nil && (kv == nil || string(kv.Value) != string(val)) {
				err = fmt.Errorf("read back a different value than written")
			}
		}
		cancel()
		c.DurationMs = time.Since(start).Milliseconds()
		c.Ok = err == nil
		if err != nil {
			c.Message = "write-read round trip through the replicated store failed: " + err.Error()
		} else {
			c.Message = "write-read round trip through the replicated store succeeded"
		}
		add(c)
	} else {
		add(contract.ReadinessCheck{Name: "database", Skipped: true, Message: "not requested"})
	}

	if checkEngine {
		start = time.Now()
		running, enrolled, err := 0, 0, error(nil)
		if s.d.Engines != nil {
			running, enrolled, err = s.d.Engines(ctx)
		}
		c := contract.ReadinessCheck{Name: "engine", DurationMs: time.Since(start).Milliseconds()}
		switch {
		case err != nil:
			c.Message = err.Error()
		case enrolled == 0:
			c.Message = "no media server is enrolled; enroll a media host first"
		case running == 0:
			c.Message = fmt.Sprintf("none of the %d enrolled media servers has its engine running", enrolled)
		default:
			c.Ok = true
			c.Message = fmt.Sprintf("%d of %d enrolled media servers have their engine running", running, enrolled)
		}
		add(c)
	} else {
		add(contract.ReadinessCheck{Name: "engine", Skipped: true, Message: "not requested"})
	}
	return rep
}
