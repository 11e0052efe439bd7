package system

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/shared/buildinfo"
)

// Info describes this process.
type Info struct {
	Product, Version, Commit, GoVersion string
	NodeID, ClusterID, Hostname         string
	OS, Arch                            string
	StartedAt                           time.Time
	Uptime                              time.Duration
	// Roles names the roles active now.
	Roles []string
}

// Version holds the build, contract and store schema versions.
type Version struct {
	Version, ContractVersion, Commit, BuildDate, GoVersion string
	StoreSchemaVersion                                     int
}

// Role is one role a process can play, and whether it plays it now.
type Role struct {
	Name        string
	Enabled     bool
	LeaderOnly  bool
	Active      bool
	Description string
}

// ConsoleSummary is the overview the console shows first.
type ConsoleSummary struct {
	ClusterID      string
	GeneratedAt    time.Time
	Members        int
	HealthyMembers int
	LeaderID       string
	Revision       int64
	// Counts of the main resources.
	Users, APITokens, Channels, MediaServers, Nodes int64
	Warnings                                        []string
}

// Info describes this process.
func (s *Service) Info(ctx context.Context) Info {
	host, _ := os.Hostname()
	return Info{
		Product: "svc streaming platform", Version: buildinfo.Version, Commit: buildinfo.Commit,
		GoVersion: buildinfo.GoVersion(), NodeID: s.d.NodeID, ClusterID: s.ClusterID(ctx),
		Hostname: host, OS: runtime.GOOS, Arch: runtime.GOARCH,
		StartedAt: s.d.StartedAt.UTC(), Uptime: time.Since(s.d.StartedAt),
		Roles: s.activeRoleNames(),
	}
}

// Version reports build and contract versions.
func (s *Service) Version() Version {
	return Version{
		Version: buildinfo.Version, ContractVersion: buildinfo.ContractVersion, Commit: buildinfo.Commit,
		BuildDate: buildinfo.BuildDate, GoVersion: buildinfo.GoVersion(), StoreSchemaVersion: sqlitefsm.SchemaVersion,
	}
}

// Roles lists the process roles of this node.
func (s *Service) Roles() []Role {
	leader := s.d.Node.Leadership().IsLeader()
	voter := false
	if cf := s.d.Node.Raft().GetConfiguration(); cf.Error() == nil {
		for _, srv := range cf.Configuration().Servers {
			if string(srv.ID) == s.d.NodeID && srv.Suffrage == raft.Voter {
				voter = true
			}
		}
	}
	return []Role{
		{Name: "control-plane", Enabled: true, Active: true, Description: "HTTP API and domain services over the replicated store"},
		{Name: "raft-voter", Enabled: voter, Active: voter, Description: "votes in leader elections and stores the replicated log"},
		{Name: "background-leader", Enabled: true, LeaderOnly: true, Active: leader, Description: "runs leader-only background tasks such as history retention"},
	}
}

func (s *Service) activeRoleNames() []string {
	var out []string
	for _, r := range s.Roles() {
		if r.Active {
			out = append(out, r.Name)
		}
	}
	return out
}

// ConsoleSummary is the overview the console shows first.
func (s *Service) ConsoleSummary(ctx context.Context) (ConsoleSummary, error) {
	st, err := s.d.Cluster.Status(ctx, "")
	if err != nil {
		return ConsoleSummary{}, err
	}
	out := ConsoleSummary{ClusterID: st.ClusterID, GeneratedAt: time.Now().UTC(), Warnings: []string{},
		Members: len(st.Members), LeaderID: st.LeaderID, Revision: st.Revision}
	for _, m := range st.Members {
		if m.Health.Status == cluster.OK {
			out.HealthyMembers++
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
		{"/security/users/", &out.Users}, {"/security/api-tokens/", &out.APITokens},
		{"/channels/", &out.Channels}, {"/media-servers/", &out.MediaServers}, {"/nodes/", &out.Nodes},
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
