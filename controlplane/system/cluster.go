package system

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/svcplatform/svc/api/contract"
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

// ClusterStatus lists the members with each one's health as it reports it.
func (s *Service) ClusterStatus(ctx context.Context, clusterID *string) (contract.ClusterStatus, error) {
	id, err := s.checkCluster(ctx, clusterID)
	if err != nil {
		return contract.ClusterStatus{}, err
	}
	n := s.d.Node
	members, err := n.Members(ctx)
	if err != nil {
		return contract.ClusterStatus{}, err
	}
	_, leaderID := n.Raft().LeaderWithID()
	st := contract.ClusterStatus{
		ClusterId: id, LeaderId: string(leaderID), Term: int64(n.Raft().CurrentTerm()),
		AppliedIndex: int64(n.State().AppliedIndex()), CommitIndex: int64(n.Raft().CommitIndex()),
		Revision: n.Revision(), Members: []contract.ClusterMember{},
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
		h := contract.ClusterMemberHealth{Reachable: v.Reachable}
		if !v.Reachable {
			h.Status = contract.ClusterMemberHealthStatusUnavailable
			h.Message = fmt.Sprintf("not reachable over the internal link: %v", v.Err)
		} else {
			h.AppliedIndex = int64(v.Status.AppliedIndex)
			h.LagEntries = max(leaderIndex-h.AppliedIndex, 0)
			h.LastContactMs = v.Status.LastContactMs
			h.Version = v.Status.Version
			switch {
			case v.Status.LeaderID == "":
				h.Status, h.Message = contract.ClusterMemberHealthStatusDegraded, "knows no leader"
			case h.LagEntries > 1000:
				h.Status, h.Message = contract.ClusterMemberHealthStatusDegraded, fmt.Sprintf("%d entries behind the leader", h.LagEntries)
			default:
				h.Status, h.Message = contract.ClusterMemberHealthStatusOk, v.Status.RaftState
			}
		}
		st.Members = append(st.Members, contract.ClusterMember{
			NodeId: v.NodeID, RaftAddress: v.RaftAddress, HttpAddress: v.HTTPAddress,
			Suffrage: contract.ClusterMemberSuffrage(v.Suffrage), Leader: v.Leader, Self: v.Self, Health: h,
		})
	}
	return st, nil
}
