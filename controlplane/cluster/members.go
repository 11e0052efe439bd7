package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// memberStatuses asks every member for its own view over the internal link
// (in parallel, bounded by a short timeout), hashAt selecting which
// revision's state hash to report.
func (s *Service) memberStatuses(ctx context.Context, members []raftnode.Member, hashAt int64) []memberView {
	out := make([]memberView, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func(i int, m raftnode.Member) {
			defer wg.Done()
			v := memberView{Member: m}
			if m.Self {
				v.Status, v.Reachable = s.d.Node.LocalStatus(ctx, hashAt), true
			} else {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				st, err := s.d.Node.PeerStatus(cctx, m.RaftAddress, hashAt)
				cancel()
				v.Status, v.Reachable, v.Err = st, err == nil, err
			}
			out[i] = v
		}(i, m)
	}
	wg.Wait()
	return out
}

type memberView struct {
	raftnode.Member
	Status    raftnode.LocalStatus
	Reachable bool
	Err       error
}

// MemberHealth is a member's health as it reports it.
type MemberHealth struct {
	Status        Level
	Message       string
	Reachable     bool
	AppliedIndex  int64
	LagEntries    int64
	LastContactMs int64
	Version       string
}

// Member is one member of the cluster.
type Member struct {
	NodeID, RaftAddress, HTTPAddress string
	Suffrage                         string
	Leader, Self                     bool
	Health                           MemberHealth
}

// Status is the raft state of the cluster and its members.
type Status struct {
	ClusterID                 string
	LeaderID                  string
	Term                      int64
	AppliedIndex, CommitIndex int64
	Revision                  int64
	Members                   []Member
}

// Status lists the members with each one's health as it reports it;
// clusterID, when not "", must be this cluster's.
func (s *Service) Status(ctx context.Context, clusterID string) (Status, error) {
	id, err := s.check(ctx, clusterID)
	if err != nil {
		return Status{}, err
	}
	n := s.d.Node
	members, err := n.Members(ctx)
	if err != nil {
		return Status{}, err
	}
	_, leaderID := n.Raft().LeaderWithID()
	st := Status{
		ClusterID: id, LeaderID: string(leaderID), Term: int64(n.Raft().CurrentTerm()),
		AppliedIndex: int64(n.State().AppliedIndex()), CommitIndex: int64(n.Raft().CommitIndex()),
		Revision: n.Revision(), Members: []Member{},
	}
	views := s.memberStatuses(ctx, members, 0)
	var leaderIndex int64
	for _, v := range views {
		if v.Leader && v.Reachable {
			leaderIndex = int64(v.Status.AppliedIndex)
		}
	}
	if leaderIndex == 0 {
		leaderIndex = int64(n.Raft().CommitIndex())
	}
	for _, v := range views {
		h := MemberHealth{Reachable: v.Reachable}
		if !v.Reachable {
			h.Status = Unavailable
			h.Message = fmt.Sprintf("not reachable over the internal link: %v", v.Err)
		} else {
			h.AppliedIndex = int64(v.Status.AppliedIndex)
			h.LagEntries = max(leaderIndex-h.AppliedIndex, 0)
			h.LastContactMs = v.Status.LastContactMs
			h.Version = v.Status.Version
			switch {
			case v.Status.LeaderID == "":
				h.Status, h.Message = Degraded, "knows no leader"
			case h.LagEntries > 1000:
				h.Status, h.Message = Degraded, fmt.Sprintf("%d entries behind the leader", h.LagEntries)
			default:
				h.Status, h.Message = OK, v.Status.RaftState
			}
		}
		st.Members = append(st.Members, Member{
			NodeID: v.NodeID, RaftAddress: v.RaftAddress, HTTPAddress: v.HTTPAddress,
			Suffrage: v.Suffrage, Leader: v.Leader, Self: v.Self, Health: h,
		})
	}
	return st, nil
}
