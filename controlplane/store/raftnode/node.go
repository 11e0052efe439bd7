package raftnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/shared/logging"
)

// Config describes one control node's store.
type Config struct {
	NodeID string
	// DataDir holds raft/wal, raft/snapshots and state.db.
	DataDir string
	// RaftBind is the listen address of the internal link; RaftAdvertise is
	// what peers dial (defaults to the bound address).
	RaftBind      string
	RaftAdvertise string
	// LinkKeys authenticate the internal link; the first one signs.
	LinkKeys [][]byte
	// Bootstrap makes a node with no existing state found a new cluster
	// with itself as the only voter.
	Bootstrap  bool
	IndexSpecs []sqlitefsm.IndexSpec
	Logger     *zap.Logger

	// Raft tuning; zero values take the defaults below.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	SnapshotThreshold  uint64
	SnapshotInterval   time.Duration
	TrailingLogs       uint64
	// WALSegmentSize is raft-wal's segment size in bytes; raft-wal
	// preallocates each segment file. Zero takes 1/16 of the data
	// directory's filesystem, between 1 and 64 MiB. raft-wal keeps serving
	// entries of its tail segment after truncation, so only whole old
	// segments are really dropped.
	WALSegmentSize int
	// StorageReserve is the free space (bytes) on the data directory's
	// filesystem below which the node refuses writes; zero takes 1/20 of
	// the filesystem, between 4 MiB and 1 GiB. It is never less than one
	// log segment plus 2 MiB, so writes are refused before the raft log
	// has to refuse an append.
	StorageReserve uint64
}

func (c *Config) defaults() {
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = 1000 * time.Millisecond
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = 1000 * time.Millisecond
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = 500 * time.Millisecond
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 2 * time.Minute
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Node is a running store replica.
type Node struct {
	cfg       Config
	log       *zap.Logger
	state     *sqlitefsm.State
	raft      *raft.Raft
	wal       *wal.WAL
	meta      *metadb.BoltMetaDB
	lock      *dirLock
	storage   *storageGuard
	snapshots *raft.FileSnapshotStore
	mux       *linkMux
	transport *raft.NetworkTransport
	fwdServer *http.Server
	fwdClient *http.Client

	leadership *Leadership
	hadState   bool
	restores   atomic.Int64
	closeOnce  sync.Once
	closed     chan struct{}
	wg         sync.WaitGroup
}

var _ store.Store = (*Node)(nil)

// Open starts the node. It does not wait for a leader. A raft log, snapshot
// store or state database that cannot be opened (a corrupt file, or a
// library that panics on it) yields an error wrapping ErrUnreadableData.
func Open(cfg Config) (*Node, error) {
	cfg.defaults()
	if cfg.NodeID == "" {
		return nil, errors.New("raftnode: node id is required")
	}
	raftDir := filepath.Join(cfg.DataDir, "raft")
	for _, d := range []string{filepath.Join(raftDir, "wal"), filepath.Join(raftDir, "snapshots")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	n := &Node{cfg: cfg, log: cfg.Logger.Named("store"), closed: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			n.closeResources()
		}
	}()
	var err error
	if n.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if n.storage, err = newStorageGuard(cfg.DataDir, cfg.StorageReserve, cfg.WALSegmentSize); err != nil {
		return nil, err
	}
	if err := unreadable("state database", filepath.Join(cfg.DataDir, "state.db"), func() (err error) {
		n.state, err = sqlitefsm.Open(filepath.Join(cfg.DataDir, "state.db"), cfg.IndexSpecs)
		return err
	}); err != nil {
		return nil, err
	}
	n.state.SetLogger(n.log)
	n.state.SetWALLimit(n.storage.walLimit())
	hlog := logging.HCLog(cfg.Logger, "raft")
	// raft-wal closes its meta store only once it opened; the node closes
	// it too, for an open that failed half-way (closing twice is harmless).
	n.meta = &metadb.BoltMetaDB{}
	if err := unreadable("raft log", filepath.Join(raftDir, "wal"), func() (err error) {
		n.wal, err = wal.Open(filepath.Join(raftDir, "wal"), wal.WithLogger(hlog), wal.WithMetaStore(n.meta), wal.WithSegmentSize(n.storage.segment))
		return err
	}); err != nil {
		return nil, err
	}
	if err := unreadable("raft snapshots", filepath.Join(raftDir, "snapshots"), func() (err error) {
		n.snapshots, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(raftDir, "snapshots"), 2, hlog)
		return err
	}); err != nil {
		return nil, err
	}
	logs := guardedLog{WAL: n.wal, g: n.storage}
	if n.mux, err = newLinkMux(cfg.RaftBind, cfg.RaftAdvertise, cfg.LinkKeys, n.log); err != nil {
		return nil, err
	}
	// MaxRPCsInFlight 1 turns raft's pipelined replication off. With it
	// on, a follower that refuses an append (its log refuses to grow on a
	// full disk) ends the pipeline's decoder while the sender may still be
	// pushing a backlog into it: the sender blocks for good, heartbeats go
	// on, and that follower never receives another entry until the leader
	// restarts (hashicorp/raft#612; the fault suite's follower-of-three
	// disk test hit it). Raft's own measurements found pipelining of
	// little use with batching (hashicorp/raft#541).
	n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: raftLayer{n.mux}, MaxPool: 4, Timeout: 10 * time.Second, Logger: hlog, MaxRPCsInFlight: 1,
	})

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 256
	// The SQLite state survives restarts and records its applied index, so
	// replaying the latest snapshot is needed only when the database is
	// older than that snapshot (for example after losing unsynced pages).
	rc.NoSnapshotRestoreOnStart = true
	if snaps, err := n.snapshots.List(); err == nil && len(snaps) > 0 && snaps[0].Index > n.state.AppliedIndex() {
		rc.NoSnapshotRestoreOnStart = false
	}

	existing, err := raft.HasExistingState(logs, n.wal, n.snapshots)
	if err != nil {
		return nil, fmt.Errorf("%w: raft log %s: %w", ErrUnreadableData, filepath.Join(raftDir, "wal"), err)
	}
	n.hadState = existing
	if cfg.Bootstrap && !existing {
		conf := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: n.transport.LocalAddr(), Suffrage: raft.Voter}}}
		if err := raft.BootstrapCluster(rc, logs, n.wal, n.snapshots, n.transport, conf); err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	f := &fsm{state: n.state, restores: func() { n.restores.Add(1) }}
	// raft.NewRaft reads the whole log after the last snapshot and panics
	// on an entry it cannot read.
	if err := unreadable("raft log", filepath.Join(raftDir, "wal"), func() (err error) {
		n.raft, err = raft.NewRaft(rc, f, logs, n.wal, n.snapshots, n.transport)
		return err
	}); err != nil {
		return nil, err
	}
	n.leadership = newLeadership(n)
	n.fwdClient = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return n.mux.dial(ctx, addr, streamForward)
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	n.fwdServer = &http.Server{Handler: n.internalHandler(), ReadHeaderTimeout: 10 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.fwdServer.Serve(forwardListener{n.mux})
	}()
	ok = true
	return n, nil
}

// InContact reports whether this node's state can be trusted to be recent:
// it is the ready leader, or it heard from the leader within maxAge. A node
// cut off from the majority stops passing this check, so it stops serving
// decisions (such as accepting a token revoked meanwhile) from stale state.
func (n *Node) InContact(maxAge time.Duration) bool {
	if n.leadership.IsLeader() {
		return true
	}
	lc := n.raft.LastContact()
	return !lc.IsZero() && time.Since(lc) <= maxAge
}

// Storage reports the data directory's free space and whether writes are
// refused for lack of it.
func (n *Node) Storage() StorageStatus { return n.storage.Status() }

// ApplyStalled reports a local failure that keeps this node from applying
// committed entries (such as a full disk), and since when; nil when it
// applies normally.
func (n *Node) ApplyStalled() (time.Time, error) { return n.state.Stalled() }

// HadState reports whether the node found raft state on disk at start
// (it is restarting rather than new).
func (n *Node) HadState() bool { return n.hadState }

// NodeID is this node's id.
func (n *Node) NodeID() string { return n.cfg.NodeID }

// RaftAddress is the advertised internal link address.
func (n *Node) RaftAddress() string { return string(n.transport.LocalAddr()) }

// State exposes the local state machine for index-table queries.
func (n *Node) State() *sqlitefsm.State { return n.state }

// Leadership is the handle background workers use to run only on the leader.
func (n *Node) Leadership() *Leadership { return n.leadership }

// Raft exposes raft statistics for diagnostics.
func (n *Node) Raft() *raft.Raft { return n.raft }

// SnapshotRestores counts snapshots installed since start (from the leader
// or from disk).
func (n *Node) SnapshotRestores() int64 { return n.restores.Load() }

// Revision implements store.Store.
func (n *Node) Revision() int64 { return n.state.Revision() }

// WaitForRevision implements store.Store.
func (n *Node) WaitForRevision(ctx context.Context, rev int64) error {
	return n.state.WaitForRevision(ctx, rev)
}

// Watch implements store.Store.
func (n *Node) Watch(ctx context.Context, prefix string, from int64) <-chan store.WatchResponse {
	return n.state.Watch(ctx, prefix, from)
}

// Range implements store.Store.
func (n *Node) Range(ctx context.Context, key string, opts store.RangeOptions) (*store.RangeResponse, error) {
	if opts.Consistency == store.Linearizable {
		if err := n.LinearizableBarrier(ctx); err != nil {
			return nil, err
		}
	}
	return n.state.Range(ctx, key, opts)
}

// LinearizableBarrier returns once this node has applied every entry that
// was committed before the call, as confirmed by the current leader.
func (n *Node) LinearizableBarrier(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	idx, err := n.readIndex(ctx)
	if err != nil {
		return err
	}
	return n.waitApplied(ctx, idx)
}

// waitApplied returns once the state holds everything up to log index idx.
// Raft hands only command and configuration entries to a batching FSM, so
// the state's applied index stops below trailing no-op and barrier entries;
// those count as applied once raft itself has applied (so committed) them.
func (n *Node) waitApplied(ctx context.Context, idx uint64) error {
	for {
		ch := n.state.Changed()
		applied := n.state.AppliedIndex()
		if applied >= idx || (n.raft.AppliedIndex() >= idx && (idx <= n.lastSnapshotIndex() || n.noStateEntries(applied+1, idx))) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// lastSnapshotIndex is the index of the newest snapshot; a snapshot holds
// the state of every entry up to it, even when the last of those entries
// were no-ops whose indices the state never recorded.
func (n *Node) lastSnapshotIndex() uint64 {
	v, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return v
}

// noStateEntries reports whether the local log entries from..to carry
// nothing for the state machine.
func (n *Node) noStateEntries(from, to uint64) bool {
	var l raft.Log
	for i := from; i <= to; i++ {
		if err := n.wal.GetLog(i, &l); err != nil {
			return false
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return false
		}
	}
	return true
}

func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	return retryOnLeaderChange(ctx, n, func(ctx context.Context, leaderAddr string) (uint64, bool, error) {
		if n.raft.State() == raft.Leader {
			idx, err := n.localReadIndex(ctx)
			return idx, errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost), err
		}
		var out readIndexReply
		retry, err := n.callLeader(ctx, leaderAddr, http.MethodGet, "/v1/read-index", nil, &out)
		// Asking for the read index changes nothing, so a lost answer is
		// simply asked again.
		return out.Index, retry || errors.Is(err, store.ErrUnknownOutcome), err
	})
}

// localReadIndex is the Raft read index: the leader's commit index, taken
// before leadership is confirmed with a quorum. It must be the commit index,
// not the leader's applied index: a follower may apply a committed entry
// before the leader's own state machine does. A fresh leader first commits
// and applies an entry of its own term (the barrier), so its commit index
// covers every write any earlier leader acknowledged.
func (n *Node) localReadIndex(ctx context.Context) (uint64, error) {
	if err := n.leadership.awaitReady(ctx); err != nil {
		return 0, err
	}
	idx := n.raft.CommitIndex()
	if err := n.await(ctx, n.raft.VerifyLeader()); err != nil {
		return 0, err
	}
	return idx, nil
}

// Txn implements store.Store: the leader applies it; a follower forwards it
// to the leader and waits until it has applied the result itself.
func (n *Node) Txn(ctx context.Context, req store.TxnRequest) (*store.TxnResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	// A write is refused here, before it enters the log, when this node
	// is short of disk space: the node that answers must be able to
	// apply it. The leader checks its own space again for forwarded ones.
	if req.Writes() {
		if err := n.storage.admitWrite(); err != nil {
			return nil, err
		}
	}
	res, err := n.propose(ctx, sqlitefsm.Command{Kind: sqlitefsm.CommandTxn, Txn: &req})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*store.TxnResponse)
	if !ok {
		return nil, fmt.Errorf("raftnode: unexpected result %T", res)
	}
	return resp, nil
}

// Compact removes watch history and revision hashes up to rev on every node.
func (n *Node) Compact(ctx context.Context, rev int64) (*sqlitefsm.CompactResult, error) {
	if err := n.storage.admitWrite(); err != nil {
		return nil, err
	}
	res, err := n.propose(ctx, sqlitefsm.Command{Kind: sqlitefsm.CommandCompact, Compact: &sqlitefsm.CompactRequest{Revision: rev}})
	if err != nil {
		return nil, err
	}
	cr, ok := res.(*sqlitefsm.CompactResult)
	if !ok {
		return nil, fmt.Errorf("raftnode: unexpected result %T", res)
	}
	return cr, nil
}

// proposal is what a forwarded command returns over the internal link.
type proposal struct {
	Txn     *store.TxnResponse       `json:"txn,omitempty"`
	Compact *sqlitefsm.CompactResult `json:"compact,omitempty"`
	Index   uint64                   `json:"index"`
}

func (n *Node) propose(ctx context.Context, cmd sqlitefsm.Command) (any, error) {
	data, err := cmd.Encode()
	if err != nil {
		return nil, err
	}
	p, err := retryOnLeaderChange(ctx, n, func(ctx context.Context, leaderAddr string) (proposal, bool, error) {
		if n.raft.State() == raft.Leader {
			return n.applyLocal(ctx, data)
		}
		var out proposal
		retry, err := n.callLeader(ctx, leaderAddr, http.MethodPost, "/v1/propose", data, &out)
		return out, retry, err
	})
	if err != nil {
		return nil, err
	}
	// Read-your-writes: answer only once this node has applied the entry.
	if err := n.state.WaitForIndex(ctx, p.Index); err != nil {
		return nil, fmt.Errorf("%w: committed at log index %d: %w", store.ErrNotYetVisible, p.Index, err)
	}
	if p.Compact != nil {
		return p.Compact, nil
	}
	return p.Txn, nil
}

// applyLocal appends and applies on the leader. The boolean reports whether
// the proposal certainly did not enter the log, so retrying is safe.
func (n *Node) applyLocal(ctx context.Context, data []byte) (proposal, bool, error) {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	f := n.raft.Apply(data, timeout)
	// The apply timeout covers only enqueueing; await bounds the rest.
	if err := n.await(ctx, f); err != nil {
		if notAppended(err) {
			return proposal{}, true, err
		}
		// Anything else, a shutdown included, may have happened after the
		// entry reached other nodes' logs.
		return proposal{}, false, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	switch r := f.Response().(type) {
	case *store.TxnResponse:
		return proposal{Txn: r, Index: f.Index()}, false, nil
	case *sqlitefsm.CompactResult:
		return proposal{Compact: r, Index: f.Index()}, false, nil
	case error:
		return proposal{}, false, r
	default:
		return proposal{}, false, fmt.Errorf("raftnode: unexpected apply result %T", r)
	}
}

// await waits for a raft future, but no longer than ctx allows and never
// past this node's shutdown: with a buffered apply channel, a future queued
// as raft shuts down may never resolve.
func (n *Node) await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.closed:
		return raft.ErrRaftShutdown
	}
}

// notAppended reports raft errors that prove a proposal never entered the
// log, so proposing it again cannot apply it twice.
func notAppended(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrEnqueueTimeout) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

// retryOnLeaderChange runs op against the current leader, retrying with a
// short backoff while no leader is known or while op reports that retrying
// is safe, until ctx ends.
func retryOnLeaderChange[T any](ctx context.Context, n *Node, op func(ctx context.Context, leaderAddr string) (T, bool, error)) (T, error) {
	var zero T
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
	}
	backoff := 10 * time.Millisecond
	lastErr := store.ErrNoLeader
	for {
		select {
		case <-n.closed:
			return zero, store.ErrClosed
		default:
		}
		addr, _ := n.raft.LeaderWithID()
		if addr != "" || n.raft.State() == raft.Leader {
			v, retry, err := op(ctx, string(addr))
			if err == nil {
				return v, nil
			}
			if !retry {
				return zero, err
			}
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if errors.Is(lastErr, store.ErrNoLeader) || errors.Is(lastErr, raft.ErrNotLeader) {
				return zero, fmt.Errorf("%w: %w", store.ErrNoLeader, ctx.Err())
			}
			return zero, fmt.Errorf("%w (last error: %w)", ctx.Err(), lastErr)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// Shutdown stops the node. A leader first hands leadership to another voter
// so the cluster does not wait for an election timeout.
func (n *Node) Shutdown() error {
	var err error
	n.closeOnce.Do(func() {
		if n.raft != nil && n.raft.State() == raft.Leader {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if cf := n.raft.GetConfiguration(); n.await(ctx, cf) == nil && len(cf.Configuration().Servers) > 1 {
				if terr := n.await(ctx, n.raft.LeadershipTransfer()); terr != nil {
					n.log.Warn("leadership transfer before shutdown failed", zap.Error(terr))
				}
			}
		}
		close(n.closed)
		err = n.closeResources()
	})
	return err
}

// Kill stops the node without a leadership transfer, as a crash would (tests).
func (n *Node) Kill() error {
	var err error
	n.closeOnce.Do(func() {
		close(n.closed)
		err = n.closeResources()
	})
	return err
}

func (n *Node) closeResources() error {
	var errs []error
	if n.leadership != nil {
		n.leadership.stop()
	}
	if n.state != nil {
		// An apply halted on a local failure (a full disk) must give up so
		// raft's shutdown does not wait for it; raft applies the entries
		// again after the next start.
		n.state.StopApplying()
	}
	if n.raft != nil {
		errs = append(errs, n.raft.Shutdown().Error())
	}
	if n.fwdServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		n.fwdServer.Shutdown(ctx)
		cancel()
	}
	if n.transport != nil {
		errs = append(errs, n.transport.Close())
	} else if n.mux != nil {
		errs = append(errs, n.mux.Close())
	}
	n.wg.Wait()
	if n.wal != nil {
		errs = append(errs, n.wal.Close())
	}
	if n.meta != nil {
		errs = append(errs, n.meta.Close())
	}
	if n.state != nil {
		errs = append(errs, n.state.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.release())
	}
	return errors.Join(errs...)
}
