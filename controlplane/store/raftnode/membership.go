package raftnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/shared/buildinfo"
)

// MembersPrefix holds one record per control node with the addresses raft's
// configuration does not know (the HTTP API address).
const MembersPrefix = "/cluster/members/"

// ErrBadMember marks a join or remove request with a bad node id or address.
var ErrBadMember = errors.New("raftnode: invalid member")

// NodeIDPattern is what a control node id must look like.
var NodeIDPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// JoinRequest asks the cluster to add a voter.
type JoinRequest struct {
	NodeID      string `json:"nodeId"`
	RaftAddress string `json:"raftAddress"`
	HTTPAddress string `json:"httpAddress"`
}

// MemberRecord is the stored description of a control node.
type MemberRecord struct {
	NodeID      string `json:"nodeId"`
	RaftAddress string `json:"raftAddress"`
	HTTPAddress string `json:"httpAddress"`
}

// Member is one voter of the raft configuration with its stored record.
type Member struct {
	MemberRecord
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	Self     bool   `json:"self"`
}

func (r JoinRequest) validate() error {
	if !NodeIDPattern.MatchString(r.NodeID) {
		return fmt.Errorf("%w: node id %q must match %s", ErrBadMember, r.NodeID, NodeIDPattern)
	}
	if r.RaftAddress == "" {
		return fmt.Errorf("%w: raft address is required", ErrBadMember)
	}
	return nil
}

// Join adds a voter, forwarding to the leader when needed. Joining again with
// the same id and address is a no-op.
func (n *Node) Join(ctx context.Context, req JoinRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	body, _ := json.Marshal(req)
	_, err := retryOnLeaderChange(ctx, n, func(ctx context.Context, leaderAddr string) (struct{}, bool, error) {
		if n.raft.State() == raft.Leader {
			err := n.joinLocal(req)
			return struct{}{}, notAppended(err), err
		}
		retry, err := n.callLeader(ctx, leaderAddr, "POST", "/v1/join", body, nil)
		return struct{}{}, retry, err
	})
	return err
}

func (n *Node) joinLocal(req JoinRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cf := n.raft.GetConfiguration()
	if err := n.await(ctx, cf); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(req.NodeID) && s.Address == raft.ServerAddress(req.RaftAddress) {
			return n.putMember(MemberRecord(req))
		}
		if s.ID == raft.ServerID(req.NodeID) || s.Address == raft.ServerAddress(req.RaftAddress) {
			// Same id at a new address (or an address reused by another id):
			// replace the old entry.
			if err := n.await(ctx, n.raft.RemoveServer(s.ID, 0, 10*time.Second)); err != nil {
				return err
			}
		}
	}
	if err := n.await(ctx, n.raft.AddVoter(raft.ServerID(req.NodeID), raft.ServerAddress(req.RaftAddress), 0, 10*time.Second)); err != nil {
		return err
	}
	return n.putMember(MemberRecord(req))
}

func (n *Node) putMember(rec MemberRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.RegisterMember(ctx, rec)
}

// RegisterMember stores rec unless the stored record already says the same.
func (n *Node) RegisterMember(ctx context.Context, rec MemberRecord) error {
	val, _ := json.Marshal(rec)
	key := MembersPrefix + rec.NodeID
	_, err := n.Txn(ctx, store.TxnRequest{
		Compares: []store.Compare{{Key: key, Target: store.TargetValue, Result: store.Equal, Value: val}},
		Else:     []store.Op{store.Put(key, val)},
	})
	return err
}

// Remove takes a voter out of the cluster and deletes its record.
func (n *Node) Remove(ctx context.Context, nodeID string) error {
	body, _ := json.Marshal(map[string]string{"nodeId": nodeID})
	_, err := retryOnLeaderChange(ctx, n, func(ctx context.Context, leaderAddr string) (struct{}, bool, error) {
		if n.raft.State() == raft.Leader {
			err := n.removeLocal(nodeID)
			return struct{}{}, notAppended(err), err
		}
		retry, err := n.callLeader(ctx, leaderAddr, "POST", "/v1/remove", body, nil)
		return struct{}{}, retry, err
	})
	return err
}

func (n *Node) removeLocal(nodeID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.await(ctx, n.raft.RemoveServer(raft.ServerID(nodeID), 0, 10*time.Second)); err != nil {
		return err
	}
	_, err := n.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(MembersPrefix + nodeID)}})
	return err
}

// Members lists the voters of the current configuration with their records.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	cf := n.raft.GetConfiguration()
	if err := n.await(ctx, cf); err != nil {
		return nil, err
	}
	_, leaderID := n.raft.LeaderWithID()
	resp, err := n.state.Range(ctx, MembersPrefix, store.RangeOptions{End: store.PrefixEnd(MembersPrefix)})
	if err != nil {
		return nil, err
	}
	recs := map[string]MemberRecord{}
	for _, kv := range resp.KVs {
		if r, err := store.Decode[MemberRecord](kv); err == nil {
			recs[r.NodeID] = r
		}
	}
	var out []Member
	for _, s := range cf.Configuration().Servers {
		rec := recs[string(s.ID)]
		rec.NodeID, rec.RaftAddress = string(s.ID), string(s.Address)
		out = append(out, Member{
			MemberRecord: rec,
			Suffrage:     s.Suffrage.String(),
			Leader:       s.ID == leaderID,
			Self:         string(s.ID) == n.cfg.NodeID,
		})
	}
	return out, nil
}

// LocalStatus is what a node reports about itself to peers and operators.
type LocalStatus struct {
	NodeID           string `json:"nodeId"`
	Version          string `json:"version"`
	SchemaVersion    int    `json:"schemaVersion"`
	RaftState        string `json:"raftState"`
	LeaderID         string `json:"leaderId"`
	Term             uint64 `json:"term"`
	LastLogIndex     uint64 `json:"lastLogIndex"`
	CommitIndex      uint64 `json:"commitIndex"`
	AppliedIndex     uint64 `json:"appliedIndex"`
	Revision         int64  `json:"revision"`
	CompactRevision  int64  `json:"compactRevision"`
	StateHash        string `json:"stateHash"`
	HashAt           int64  `json:"hashAt,omitempty"`
	HashAtRevision   string `json:"hashAtRevision,omitempty"`
	LastContactMs    int64  `json:"lastContactMs"`
	SnapshotRestores int64  `json:"snapshotRestores"`
}

// LocalStatus reports this node's view; with hashAt > 0 it includes the
// state hash after that revision when it is still retained.
func (n *Node) LocalStatus(ctx context.Context, hashAt int64) LocalStatus {
	_, leaderID := n.raft.LeaderWithID()
	st := LocalStatus{
		NodeID:           n.cfg.NodeID,
		Version:          buildinfo.Version,
		SchemaVersion:    sqlitefsm.SchemaVersion,
		RaftState:        n.raft.State().String(),
		LeaderID:         string(leaderID),
		Term:             n.raft.CurrentTerm(),
		LastLogIndex:     n.raft.LastIndex(),
		CommitIndex:      n.raft.CommitIndex(),
		AppliedIndex:     n.state.AppliedIndex(),
		Revision:         n.state.Revision(),
		CompactRevision:  n.state.CompactRevision(),
		StateHash:        n.state.StateHash(),
		SnapshotRestores: n.restores.Load(),
	}
	if n.raft.State() == raft.Leader {
		st.LastContactMs = 0
	} else if lc := n.raft.LastContact(); !lc.IsZero() {
		st.LastContactMs = time.Since(lc).Milliseconds()
	} else {
		st.LastContactMs = -1
	}
	if hashAt > 0 {
		st.HashAt = hashAt
		st.HashAtRevision, _ = n.state.HashAt(ctx, hashAt)
	}
	return st
}

// PeerStatus asks another control node for its LocalStatus over the
// internal link.
func (n *Node) PeerStatus(ctx context.Context, raftAddr string, hashAt int64) (LocalStatus, error) {
	var st LocalStatus
	_, err := n.callPeer(ctx, raftAddr, "GET", fmt.Sprintf("/v1/status?hashAt=%d", hashAt), nil, &st)
	return st, err
}

// WaitMembersApplied returns once every reachable member has applied
// revision rev, so a change such as a revocation is in force on all of them.
// A member that cannot be reached within the deadline is reported; it will
// apply the change before it next hears from the leader.
func (n *Node) WaitMembersApplied(ctx context.Context, rev int64) error {
	members, err := n.Members(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Second)
	var lagging []string
	for _, m := range members {
		if m.Self {
			if err := n.state.WaitForRevision(ctx, rev); err != nil {
				return err
			}
			continue
		}
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := n.PeerStatus(cctx, m.RaftAddress, 0)
			cancel()
			if err == nil && st.Revision >= rev {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				lagging = append(lagging, m.NodeID)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(lagging) > 0 {
		n.log.Warn("members did not confirm a revision in time", zap.Int64("revision", rev), zap.Strings("members", lagging))
	}
	return nil
}
