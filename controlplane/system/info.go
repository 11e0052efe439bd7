package system

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/shared/buildinfo"
)

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
	st, err := s.d.Cluster.Status(ctx, "")
	if err != nil {
		return contract.ConsoleSummary{}, err
	}
	out := contract.ConsoleSummary{ClusterId: st.ClusterID, GeneratedAt: time.Now().UTC(), Warnings: []string{}}
	out.Cluster = contract.ConsoleClusterSummary{Members: int32(len(st.Members)), LeaderId: st.LeaderID, Revision: st.Revision}
	for _, m := range st.Members {
		if m.Health.Status == cluster.OK {
			out.Cluster.HealthyMembers++
		} else {
			out.Warnings = append(out.Warnings, fmt.Sprintf("member %s is %s: %s", m.NodeID, m.Health.Status, m.Health.Message))
		}
	}
	if st.LeaderID == "" {
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
