package server

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// loop is background work a control node runs from start to shutdown.
type loop struct {
	name string
	// leader loops run only while this node leads: each is started at
	// every election this node wins and stopped when it loses the lead.
	leader bool
	run    func(ctx context.Context)
}

// loops is every loop a control node runs, in one table: what runs on
// every node, then what only the leader runs. Each owner's Run returns when
// its context ends; Shutdown waits for all of them.
func (s *Server) loops() []loop {
	cfg, node, log := s.Config, s.Node, s.Log
	a := s.agents
	return []loop{
		// Every node.
		{name: "member record", run: func(ctx context.Context) {
			registerSelf(ctx, node, raftnode.MemberRecord{NodeID: cfg.NodeID, RaftAddress: node.RaftAddress(), HTTPAddress: cfg.APIURL()}, log)
		}},
		{name: "agent port record", run: func(ctx context.Context) {
			retryEverySecond(ctx, a.log, "registering the agent port", func(ctx context.Context) error {
				_, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(agentPortsPrefix+cfg.NodeID, []byte(cfg.AgentURL()))}})
				return err
			})
		}},
		{name: "system tasks", run: s.tasks.Loop},
		{name: "bootstrap announcement", run: s.announceBootstrap},
		{name: "API token use times", run: func(ctx context.Context) {
			s.tokenUsage.Run(ctx, cfg.TokenUsageInterval, func(err error) { log.Warn("writing API token use times failed", zap.Error(err)) })
		}},
		{name: "node command wake-ups", run: a.commands.Run},
		{name: "own heartbeat", run: a.monitor.Run},
		{name: "heartbeat relay", run: a.relay.Run},
		{name: "engine hook inbox", run: s.Hooks.Run},
		{name: "GB28181 cut-off holder", run: s.watchGBCutOff},

		// The leader.
		{name: "cluster identity", leader: true, run: func(ctx context.Context) { ensureIdentity(ctx, node, log) }},
		{name: "cluster CA", leader: true, run: func(ctx context.Context) {
			retryEverySecond(ctx, a.log, "making the cluster CA", func(ctx context.Context) error {
				id := s.System.ClusterID(ctx)
				if id == "" {
					return clusterca.ErrNotReady
				}
				return a.authority.Ensure(ctx, id)
			})
		}},
		{name: "node command secrets scrub", leader: true, run: func(ctx context.Context) {
			retryEverySecond(ctx, a.log, "scrubbing secrets of older node commands", func(ctx context.Context) error {
				n, err := a.commands.ScrubSecrets(ctx)
				if n > 0 {
					a.log.Info("sealed the source credentials older node commands held in clear", zap.Int("commands", n))
				}
				return err
			})
		}},
		{name: "node command reaper", leader: true, run: func(ctx context.Context) { a.commands.ReapLoop(ctx, a.log) }},
		{name: "media node TTL", leader: true, run: func(ctx context.Context) { a.nodes.WatchTTL(ctx, a.presence, cfg.NodeHeartbeatTTL, a.log) }},
		{name: "enrollment code purge", leader: true, run: func(ctx context.Context) { every(ctx, time.Minute, a.purgeCodes) }},
		{name: "console session sweep", leader: true, run: func(ctx context.Context) { sweepSessions(ctx, s.Sessions, log.Named("session")) }},
		{name: "channel history pruning", leader: true, run: func(ctx context.Context) {
			clog := log.Named("channels")
			s.Channels.PruneLoop(ctx, channels.DefaultRetention, time.Hour, func(removed int, err error) {
				if err != nil && ctx.Err() == nil {
					clog.Warn("pruning channel history failed", zap.Error(err))
				} else if removed > 0 {
					clog.Debug("pruned channel history", zap.Int("removed", removed))
				}
			})
		}},
		{name: "GB28181 record query pruning", leader: true, run: func(ctx context.Context) {
			glog := log.Named("gb28181")
			gb28181.PruneRecordQueriesLoop(ctx, node, cfg.GB28181RecordQueryRetention, 10*time.Minute, func(removed int, err error) {
				if err != nil && ctx.Err() == nil {
					glog.Warn("pruning GB28181 record queries failed", zap.Error(err))
				} else if removed > 0 {
					glog.Debug("pruned GB28181 record queries", zap.Int("removed", removed))
				}
			})
		}},
		{name: "GB28181 stale holders", leader: true, run: func(ctx context.Context) {
			h := &gb28181.StaleHolders{Store: node, Reader: node.State(), NodeID: cfg.NodeID, Probe: s.probeMember, Timeout: cfg.GB28181HolderTimeout, Log: log.Named("gb28181"),
				End: s.gbSessionEnders()}
			h.Run(ctx, min(cfg.GB28181HolderTimeout/3, 5*time.Second))
		}},
		{name: "webhook dispatcher", leader: true, run: s.Dispatcher.Run},
		{name: "legacy webhook migration", leader: true, run: s.migrateLegacyWebhook},
		{name: "stream dispatcher", leader: true, run: s.streamDispatcher.Run},
		{name: "stream reconciler", leader: true, run: s.streamReconciler.Run},
		{name: "snapshots", leader: true, run: s.Snapshots.Run},
		{name: "auto recording", leader: true, run: s.autoRecording.Run},
		{name: "cut/merge worker", leader: true, run: s.cutMerge.Run},
		{name: "recording disk sweep", leader: true, run: func(ctx context.Context) {
			s.Recording.RunDiskSweep(ctx, cfg.RecordingDiskSweepInterval, log.Named("recording"))
		}},
		// The plans' retention deletes by days, so the disk sweep's
		// interval is fine-grained enough.
		{name: "recording plan retention", leader: true, run: func(ctx context.Context) {
			every(ctx, cfg.RecordingDiskSweepInterval, func(ctx context.Context) { s.Recording.PlanRetentionPass(ctx, log.Named("recording")) })
		}},
		{name: "meeting room sweep", leader: true, run: func(ctx context.Context) {
			s.Rooms.RunSweeper(ctx, roomSweepInterval, func(err error) { log.Named("rooms").Warn("room sweep", zap.Error(err)) })
		}},
		{name: "meeting composites", leader: true, run: func(ctx context.Context) {
			s.Rooms.RunComposites(ctx, roomCompositeInterval, func(err error) { log.Named("rooms").Warn("meeting composites", zap.Error(err)) })
		}},
		{name: "playback lease sweeper", leader: true, run: func(ctx context.Context) { s.Playback.RunSweeper(ctx, log.Named("playback")) }},
	}
}

// runLoops starts every loop of the table; Shutdown cancels ctx and waits.
func (s *Server) runLoops(ctx context.Context) {
	for _, l := range s.loops() {
		run := l.run
		if l.leader {
			run = func(ctx context.Context) { s.Node.Leadership().Run(ctx, l.run) }
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			run(ctx)
		}()
	}
}

// every calls fn at each tick of interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// probeMember answers whether control node id is a member and, if it is,
// nil when it answers a status request over the internal link.
func (s *Server) probeMember(ctx context.Context, id string) (bool, error) {
	members, err := s.Node.Members(ctx)
	if err != nil {
		return true, err
	}
	for _, m := range members {
		if m.NodeID == id {
			_, err := s.Node.PeerStatus(ctx, m.RaftAddress, 0)
			return true, err
		}
	}
	return false, nil
}

// watchGBCutOff ends the GB28181 dialogs this node holds once it has been
// out of contact with a leader for the holder timeout, as long as the
// leader takes to give up on it and end their sessions without a BYE
// (and its talk sessions' senders stop);
// back in contact, it finishes what it could not do meanwhile
// (Service.Rejoined). Out of contact means not heard from a leader within
// one check interval, at every check for the whole timeout: a node that
// just gave up the lead has a stale last contact for a moment.
func (s *Server) watchGBCutOff(ctx context.Context) {
	if s.GB28181 == nil {
		return
	}
	timeout := s.Config.GB28181HolderTimeout
	interval := min(timeout/3, 5*time.Second)
	var since time.Time // the first check of the current time out of contact
	every(ctx, interval, func(ctx context.Context) {
		if s.Node.InContact(interval) {
			since = time.Time{}
			if err := s.GB28181.Rejoined(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("GB28181 dialogs ended while cut off: records not removed", zap.Error(err))
			}
			return
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		if now.Sub(since) >= timeout {
			why := fmt.Sprintf("control node %s was cut off from the cluster (no leader for %s)", s.Config.NodeID, now.Sub(since).Round(time.Second))
			s.GB28181.EndDialogsCutOff(why)
			// The leader records this node's talk sessions as released
			// (talk.EndNode): their senders stop here too, so audio posted
			// to this node is refused, not sent to a device the cluster
			// says is no longer talked to.
			if s.talk != nil {
				s.talk.ReleaseAll(why)
			}
		}
	})
}
