package streams

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Reconciler keeps what the control plane holds about each media server
// (Online sessions, channels that should be pulled there) equal to what the
// server's engine actually runs. Hooks report changes as they happen, but an
// engine that crashes reports nothing, a new engine process starts empty,
// and a hook can be lost while no control node answers; events alone left
// channels Online, with leases handed out, for streams no engine had.
//
// It runs on the leader and acts on three signals:
//
//   - the engine goes down (crash, stop, heartbeat timeout) or a new engine
//     process is up (restart, agent restart, host reboot): every Online
//     session the old engine held, that is, every session last written
//     before the node record recorded the change, goes Offline at once
//     (leases then answer stream_not_ready and channels Retrying);
//   - a new engine process is up, this leader has just taken over, or the
//     counts the agent's heartbeats carry (ready streams, pull proxies)
//     disagree with the store twice in a row: a full comparison reads the
//     engine's own stream and proxy lists through its agent, sets sessions
//     to what the engine reports, starts again every channel that should
//     run there and has no pull proxy, and removes proxies of channels
//     that should not run there;
//   - in any case at least every FullEvery, as a net under the others.
//
// Every write is guarded by the revision it was decided from, so a hook
// that lands meanwhile wins over the reconciler's older view.
type Reconciler struct {
	Store    store.Store
	Sessions *Service
	Channels *channels.Service
	Nodes    *nodes.Service
	Presence *nodes.Presence
	Servers  *mediaserver.Service
	Log      *zap.Logger
	// Interval spaces the checks of the heartbeats' counts (default 5 s).
	Interval time.Duration
	// FullEvery is the longest time between two full comparisons of a
	// media server (default 5 min).
	FullEvery time.Duration

	mu      sync.Mutex
	servers map[string]*serverState
}

// reconciler is the actor of what the reconciler writes.
var reconciler = audit.Actor{Type: "system", ID: "stream-reconciler"}

// serverState is what the reconciler knows of one media server. The
// fields under mu are the work asked for; one goroutine per server does
// it, so a slow agent delays only its own server.
type serverState struct {
	wake chan struct{}

	mu sync.Mutex
	// staleBefore: Online sessions last written before this revision
	// belong to an engine that is gone.
	staleBefore int64
	// full asks for a full comparison with the engine's lists.
	full bool
	// why says what asked for it, for the log.
	why string

	// lastFull is when the last full comparison started.
	lastFull time.Time

	// Owned by the Run goroutine.
	instance   string
	mediaUp    bool
	mismatches int
}

func (st *serverState) sinceFull() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	return time.Since(st.lastFull)
}

func (st *serverState) setFull(at time.Time) {
	st.mu.Lock()
	st.lastFull = at
	st.mu.Unlock()
}

func (st *serverState) ask(staleBefore int64, full bool, why string) {
	st.mu.Lock()
	st.staleBefore = max(st.staleBefore, staleBefore)
	if full && !st.full {
		st.full, st.why = true, why
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *serverState) take() (staleBefore int64, full bool, why string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	staleBefore, full, why = st.staleBefore, st.full, st.why
	st.staleBefore, st.full, st.why = 0, false, ""
	return staleBefore, full, why
}

// instanceOf names the engine process a record describes: a new agent boot
// or a new pid is a new process, which starts with no stream and no proxy.
func instanceOf(rec *nodes.Record) string {
	if rec.Engine.Process != agentapi.EngineRunning {
		return ""
	}
	return fmt.Sprintf("%s/%d", rec.Engine.BootID, rec.Engine.PID)
}

// Run reconciles until ctx ends (leadership lost).
func (r *Reconciler) Run(ctx context.Context) {
	interval, fullEvery := r.Interval, r.FullEvery
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if fullEvery <= 0 {
		fullEvery = 5 * time.Minute
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	r.mu.Lock()
	r.servers = map[string]*serverState{}
	r.mu.Unlock()
	state := func(nodeID string) *serverState {
		r.mu.Lock()
		defer r.mu.Unlock()
		st := r.servers[nodeID]
		if st == nil {
			st = &serverState{wake: make(chan struct{}, 1)}
			r.servers[nodeID] = st
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.work(ctx, nodeID, st)
			}()
		}
		return st
	}

	// A new leader knows nothing of what happened before it: compare every
	// online server once, and mark what engines that are down left Online.
	rev := r.Store.Revision()
	recs, err := r.Nodes.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("reconciler: reading media servers failed", zap.Error(err))
		}
	}
	for _, rec := range recs {
		st := state(rec.NodeID)
		st.instance, st.mediaUp = instanceOf(rec), rec.Engine.Media == nodes.MediaOnline
		if st.mediaUp {
			st.ask(0, true, "leader takeover")
		} else {
			st.ask(rev+1, false, "")
		}
	}

	watch := r.Store.Watch(ctx, nodes.RecordPrefix, rev+1)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case wr, ok := <-watch:
			if !ok {
				return
			}
			if wr.Err != nil {
				if ctx.Err() == nil {
					r.Log.Warn("reconciler: watching media servers failed; starting over", zap.Error(wr.Err))
					// Run is restarted by its leadership loop's caller only
					// on leadership changes: start the watch again here.
					watch = r.Store.Watch(ctx, nodes.RecordPrefix, r.Store.Revision()+1)
				}
				continue
			}
			for _, ev := range wr.Events {
				if ev.Type != store.EventPut {
					continue
				}
				rec, err := nodes.DecodeRecord(ev.KV)
				if err != nil {
					r.Log.Warn("reconciler: unreadable node record", zap.String("key", ev.KV.Key), zap.Error(err))
					continue
				}
				r.observe(state(rec.NodeID), rec, ev.KV.ModRevision)
			}
		case <-tick.C:
			r.checkCounts(ctx, state, fullEvery)
		}
	}
}

// observe reacts to a node record change: an engine that went down or was
// replaced leaves its sessions stale; a new engine gets a full comparison.
func (r *Reconciler) observe(st *serverState, rec *nodes.Record, rev int64) {
	up := rec.Engine.Media == nodes.MediaOnline
	inst := instanceOf(rec)
	switch {
	case st.mediaUp && !up:
		st.ask(rev, false, "")
	case up && inst != st.instance:
		// A new engine process: what the old one held is gone, and the new
		// one has no proxy yet.
		st.ask(rev, true, "engine process "+inst+" started")
	case up && !st.mediaUp:
		st.ask(rev, true, "media server back online")
	}
	st.instance, st.mediaUp = inst, up
}

// checkCounts compares the counts of each online engine's last heartbeat
// with the store; two disagreements in a row (a heartbeat is up to one
// interval old) or FullEvery without a comparison ask for one.
func (r *Reconciler) checkCounts(ctx context.Context, state func(string) *serverState, fullEvery time.Duration) {
	recs, err := r.Nodes.List(ctx)
	if err != nil {
		return
	}
	for _, rec := range recs {
		if rec.Engine.Media != nodes.MediaOnline || rec.Status != nodes.StatusOnline {
			continue
		}
		st := state(rec.NodeID)
		if st.sinceFull() > fullEvery {
			st.ask(0, true, "periodic check")
			continue
		}
		hb, _, ok := r.Presence.Last(rec.NodeID)
		if !ok || hb.Engine.Status != agentapi.EngineRunning {
			continue
		}
		online, proxies, err := r.expected(ctx, rec.MediaServerID)
		if err != nil {
			continue
		}
		if hb.Engine.Streams == online && hb.Engine.Proxies == proxies {
			st.mismatches = 0
			continue
		}
		st.mismatches++
		if st.mismatches >= 2 {
			st.mismatches = 0
			st.ask(0, true, fmt.Sprintf("the engine reports %d streams and %d proxies, the store holds %d Online sessions and %d running channels",
				hb.Engine.Streams, hb.Engine.Proxies, online, proxies))
		}
	}
}

// expected counts the Online sessions and the channels that should be
// pulled on a media server.
func (r *Reconciler) expected(ctx context.Context, mediaServerID string) (online, proxies int, err error) {
	sessions, err := r.sessions(ctx, mediaServerID)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range sessions {
		if s.State == StateOnline {
			online++
		}
	}
	want, err := r.wanted(ctx, mediaServerID)
	return online, len(want), err
}

// work does one media server's reconciliation whenever asked.
func (r *Reconciler) work(ctx context.Context, nodeID string, st *serverState) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.wake:
		}
		staleBefore, full, why := st.take()
		rec, err := r.Nodes.Get(ctx, nodeID)
		if err != nil {
			continue
		}
		if staleBefore > 0 {
			if err := r.markStale(ctx, rec, staleBefore); err != nil && ctx.Err() == nil {
				r.Log.Warn("reconciler: taking a stopped engine's sessions offline failed", zap.String("mediaServer", rec.MediaServerID), zap.Error(err))
			}
		}
		if full && rec.Engine.Media == nodes.MediaOnline && rec.Status == nodes.StatusOnline {
			st.setFull(time.Now())
			if err := r.compare(ctx, rec, why); err != nil && ctx.Err() == nil {
				r.Log.Warn("reconciler: comparing with the engine failed", zap.String("mediaServer", rec.MediaServerID), zap.Error(err))
				// Try again at the next periodic check rather than spin.
				st.setFull(time.Time{})
			}
		}
	}
}

// keyedSession is a session with the revision it was read at.
type keyedSession struct {
	Session
	rev int64
}

// sessions reads every session of a media server with its mod revision.
func (r *Reconciler) sessions(ctx context.Context, mediaServerID string) ([]keyedSession, error) {
	prefix := SessionsPrefix + url.PathEscape(mediaServerID) + "/"
	resp, err := r.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	out := make([]keyedSession, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		s, err := store.Decode[Session](kv)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", kv.Key, err)
		}
		out = append(out, keyedSession{Session: s, rev: kv.ModRevision})
	}
	return out, nil
}

// markStale takes Offline every Online session of the server last written
// before rev: its engine went down or was replaced at rev.
func (r *Reconciler) markStale(ctx context.Context, rec *nodes.Record, rev int64) error {
	sessions, err := r.sessions(ctx, rec.MediaServerID)
	if err != nil {
		return err
	}
	cause := "the engine of media server " + rec.MediaServerID + " stopped"
	if rec.Engine.Media == nodes.MediaOnline {
		cause = "the engine of media server " + rec.MediaServerID + " restarted; pulling again"
	}
	var errs []error
	n := 0
	for _, s := range sessions {
		if s.State != StateOnline || s.rev >= rev {
			continue
		}
		if err := r.offline(ctx, s, cause); err != nil {
			errs = append(errs, err)
		} else {
			n++
		}
	}
	if n > 0 {
		r.Log.Info("reconciler: sessions of a stopped engine taken offline", zap.String("mediaServer", rec.MediaServerID), zap.Int("sessions", n))
	}
	return errors.Join(errs...)
}

func (r *Reconciler) offline(ctx context.Context, s keyedSession, cause string) error {
	rev := s.rev
	_, err := r.Sessions.Apply(ctx, Change{MediaServerID: s.MediaServerID, NodeID: s.NodeID, Vhost: s.Vhost, App: s.App, Stream: s.Stream,
		Cause: cause, IfModRevision: &rev})
	if errors.Is(err, ErrSessionChanged) {
		return nil
	}
	return err
}

// wanted lists the channels that should be pulled on a media server now:
// desired Running, active, enabled, auto-recovery not paused, placed there.
func (r *Reconciler) wanted(ctx context.Context, mediaServerID string) (map[channels.ChannelID]channels.Channel, error) {
	out := map[channels.ChannelID]channels.Channel{}
	for page := 1; ; page++ {
		rows, total, err := r.Channels.List(ctx, channels.Filter{MediaServerID: mediaServerID, DesiredState: channels.DesiredRunning,
			Activation: channels.ActivationActive, Page: page, PageSize: 500})
		if err != nil {
			return nil, err
		}
		for _, ch := range rows {
			if ch.Enabled && !ch.AutoRecoveryPaused && ch.Protocol == channels.ProtocolRTSP {
				out[ch.ChannelID] = ch
			}
		}
		if int64(page*500) >= total || len(rows) == 0 {
			return out, nil
		}
	}
}

// compare sets the server's sessions and pull proxies to what its engine
// reports and what its channels want.
func (r *Reconciler) compare(ctx context.Context, rec *nodes.Record, why string) error {
	// Read the store first: anything a hook writes after this read carries
	// a later revision, and the guarded writes below leave it alone.
	sessions, err := r.sessions(ctx, rec.MediaServerID)
	if err != nil {
		return err
	}
	var streams engineapi.StreamList
	if err := r.engine(ctx, rec, agentapi.TypeEngineStreamList, agentapi.StreamFilter{}, true, &streams); err != nil {
		return err
	}
	var proxies engineapi.ProxyList
	if err := r.engine(ctx, rec, agentapi.TypeEngineProxyList, nil, true, &proxies); err != nil {
		return err
	}
	want, err := r.wanted(ctx, rec.MediaServerID)
	if err != nil {
		return err
	}
	var errs []error
	fixed := 0

	// Sessions: what the engine plays is Online, nothing else.
	type pathKey struct{ vhost, app, stream string }
	have := map[pathKey]keyedSession{}
	for _, s := range sessions {
		have[pathKey{s.Vhost, s.App, s.Stream}] = s
	}
	playing := map[pathKey]bool{}
	for _, info := range streams.Streams {
		vhost := info.Vhost
		if vhost == "" {
			vhost = channels.DefaultVhost
		}
		k := pathKey{vhost, info.App, info.Stream}
		if !info.Ready {
			continue
		}
		playing[k] = true
		if s, ok := have[k]; ok && s.State == StateOnline {
			continue
		}
		var rev int64
		if s, ok := have[k]; ok {
			rev = s.rev
		}
		_, err := r.Sessions.Apply(ctx, Change{MediaServerID: rec.MediaServerID, NodeID: rec.NodeID, Vhost: vhost, App: info.App, Stream: info.Stream,
			Online: true, Origin: info.Origin, Tracks: tracksOf(info), Cause: "the engine plays it (" + why + ")", IfModRevision: &rev})
		switch {
		case err == nil:
			fixed++
		case !errors.Is(err, ErrSessionChanged):
			errs = append(errs, err)
		}
	}
	for k, s := range have {
		if s.State != StateOnline || playing[k] {
			continue
		}
		if err := r.offline(ctx, s, "the engine of media server "+rec.MediaServerID+" does not have the stream ("+why+")"); err != nil {
			errs = append(errs, err)
		} else {
			fixed++
		}
	}

	// Pull proxies: one per channel that should run here.
	pulling := map[channels.ChannelID]bool{}
	for _, p := range proxies.Proxies {
		id := channels.ChannelID(p.ID)
		pulling[id] = true
		if _, ok := want[id]; ok {
			continue
		}
		if err := r.removeOrphan(ctx, rec, id); err != nil {
			errs = append(errs, err)
		}
	}
	restarted := 0
	for id := range want {
		if pulling[id] {
			continue
		}
		_, _, err := r.Channels.Start(ctx, reconciler, id)
		switch {
		case err == nil:
			restarted++
		case errors.Is(err, channels.ErrNotFound), errors.Is(err, channels.ErrPending), errors.Is(err, channels.ErrDisabled), errors.Is(err, channels.ErrContended):
			// Changed meanwhile; the next comparison sees the new state.
		default:
			errs = append(errs, err)
		}
	}
	if fixed > 0 || restarted > 0 {
		r.Log.Info("reconciler: media server brought in line with its engine", zap.String("mediaServer", rec.MediaServerID),
			zap.String("why", why), zap.Int("sessionsFixed", fixed), zap.Int("channelsStarted", restarted))
	}
	return errors.Join(errs...)
}

// removeOrphan removes a pull proxy of a channel that should not run on
// this server (stopped, deleted, moved) whose stop did not reach the
// engine. Proxies that belong to no channel (added by an operator through
// the engine's control API) are left alone.
func (r *Reconciler) removeOrphan(ctx context.Context, rec *nodes.Record, id channels.ChannelID) error {
	ch, err := r.Channels.Get(ctx, id)
	if errors.Is(err, channels.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ch.DesiredState == channels.DesiredRunning && ch.MediaServerID == rec.MediaServerID {
		return nil // paused or disabled meanwhile: its own commands decide
	}
	err = r.engine(ctx, rec, agentapi.TypeEngineProxyRemove, agentapi.ProxyRef{ID: string(id)}, false, nil)
	if err == nil {
		r.Log.Info("reconciler: removed the pull proxy of a channel that should not run here", zap.String("mediaServer", rec.MediaServerID),
			zap.String("channel", string(id)))
	}
	return err
}

// engine runs one node command on the server's agent and decodes its
// result; a read is canceled when it does not finish in time.
func (r *Reconciler) engine(ctx context.Context, rec *nodes.Record, typ string, payload any, read bool, out any) error {
	o, err := r.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: rec.NodeID}, Type: typ, Payload: payload,
		Reason: "stream reconciliation", Actor: reconciler, Read: read, Wait: 15 * time.Second}, out)
	if err != nil {
		return err
	}
	if !o.Done {
		return fmt.Errorf("%s on %s did not finish in time", typ, rec.MediaServerID)
	}
	return nil
}

func tracksOf(info engineapi.StreamInfo) []Track {
	out := make([]Track, 0, len(info.Tracks))
	for _, t := range info.Tracks {
		out = append(out, Track{Kind: t.Kind, Codec: t.Codec, Width: t.Width, Height: t.Height, FPS: t.FPS, SampleRate: t.SampleRate, Channels: t.Channels})
	}
	return out
}
