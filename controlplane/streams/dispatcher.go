package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Dispatcher turns the channels' Pending stream commands into node
// commands for the media servers' agents (a pull proxy added or removed
// on the engine), places channels without a media server on the least
// loaded online one, and restarts channels that should run once their
// backoff has passed. It runs on the leader only.
type Dispatcher struct {
	Channels *channels.Service
	Nodes    *nodes.Service
	Presence *nodes.Presence
	Commands *nodecommand.Service
	Log      *zap.Logger
	// Interval spaces the scans (default 500 ms).
	Interval time.Duration
	// CommandWait bounds how long one node command may take (default 30 s).
	CommandWait time.Duration

	// GB invites GB28181 devices for their channels; nil fails their starts.
	GB GBInviter
	// Store keeps the GB28181 live sessions' records (GBLivePrefix), so a
	// later leader ends what an earlier one started.
	Store store.Store
	// GBRTPTimeout is how long a GB28181 channel's RTP server waits
	// without media (default 15 s).
	GBRTPTimeout time.Duration

	mu       sync.Mutex
	inFlight map[channels.CommandID]bool
	gb       gbSessions
}

// system is the actor of everything the dispatcher does.
var system = audit.Actor{Type: "system", ID: "stream-dispatcher"}

// maxParallel bounds node commands in flight from one dispatcher.
const maxParallel = 32

// Run scans until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	interval := d.Interval
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	d.mu.Lock()
	d.inFlight = map[channels.CommandID]bool{}
	d.mu.Unlock()
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cmds, err := d.Channels.PendingCommands(ctx, maxParallel)
		if err != nil && ctx.Err() == nil {
			d.Log.Warn("reading pending stream commands failed", zap.Error(err))
		}
		for _, cmd := range cmds {
			if !d.claim(cmd.CommandID) {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func(cmd channels.StreamCommand) {
				defer wg.Done()
				defer func() { <-sem; d.release(cmd.CommandID) }()
				d.run(ctx, cmd)
			}(cmd)
		}
		if err := d.reconcile(ctx); err != nil && ctx.Err() == nil {
			d.Log.Warn("reconciling channels failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Dispatcher) claim(id channels.CommandID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inFlight[id] {
		return false
	}
	d.inFlight[id] = true
	return true
}

func (d *Dispatcher) release(id channels.CommandID) {
	d.mu.Lock()
	delete(d.inFlight, id)
	d.mu.Unlock()
}

// run carries one stream command through to its node command's outcome.
func (d *Dispatcher) run(ctx context.Context, cmd channels.StreamCommand) {
	ch, err := d.Channels.Get(ctx, cmd.ChannelID)
	if errors.Is(err, channels.ErrNotFound) {
		d.mark(ctx, cmd, channels.CommandCanceled, "", "the channel was deleted")
		return
	}
	if err != nil {
		d.Log.Warn("reading a command's channel failed", zap.String("command", string(cmd.CommandID)), zap.Error(err))
		return
	}
	switch cmd.Action {
	case channels.ActionStart:
		d.start(ctx, cmd, ch)
	case channels.ActionStop:
		d.stop(ctx, cmd, ch)
	default:
		d.mark(ctx, cmd, channels.CommandFailed, "", "unknown action "+string(cmd.Action))
	}
}

func (d *Dispatcher) mark(ctx context.Context, cmd channels.StreamCommand, st channels.CommandState, nodeCmd, cause string) {
	if _, err := d.Channels.MarkCommand(ctx, system, cmd.CommandID, st, nodeCmd, cause); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording a stream command's state failed", zap.String("command", string(cmd.CommandID)), zap.Error(err))
	}
}

func (d *Dispatcher) start(ctx context.Context, cmd channels.StreamCommand, ch *channels.Channel) {
	fail := func(cause string) {
		d.mark(ctx, cmd, channels.CommandFailed, "", cause)
		if _, err := d.Channels.RecordFailedStart(ctx, system, ch.ChannelID, cmd.CommandID, cause); err != nil && ctx.Err() == nil {
			d.Log.Warn("recording a failed start failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
		}
	}
	if ch.Protocol == channels.ProtocolGB28181 {
		d.startGB(ctx, cmd, ch, fail)
		return
	}
	if ch.Protocol != channels.ProtocolRTSP {
		fail(fmt.Sprintf("pulling %s channels needs the %s device integration, which this version does not have", ch.Protocol, ch.Protocol))
		return
	}
	rec, err := d.place(ctx, ch)
	if err != nil {
		fail(err.Error())
		return
	}
	src, err := d.Channels.SourceURL(ctx, ch.ChannelID)
	if err != nil {
		fail("reading the source URL: " + err.Error())
		return
	}
	// Starting is recorded before the engine can report media: written
	// after the node command, it raced the engine's Online and sometimes
	// replaced it while the stream played.
	if _, err := d.Channels.SetCommandState(ctx, system, ch.ChannelID, cmd.CommandID, channels.ActualStarting,
		"pulling on media server "+rec.MediaServerID+"; waiting for media"); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording Starting failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
	res, err := d.node(ctx, cmd, rec, agentapi.TypeEngineProxyAdd, proxyAddRequest(ch, src), "start channel "+string(ch.ChannelID))
	if err != nil && !isCode(res, engineapi.CodeProxyExists) {
		fail(err.Error())
		return
	}
	d.mark(ctx, cmd, channels.CommandSucceeded, res.CommandID, "")
}

func (d *Dispatcher) stop(ctx context.Context, cmd channels.StreamCommand, ch *channels.Channel) {
	if ch.Protocol == channels.ProtocolGB28181 {
		d.stopGB(ctx, cmd, ch)
		return
	}
	if ch.MediaServerID == "" {
		d.mark(ctx, cmd, channels.CommandSucceeded, "", "")
		return
	}
	rec, err := d.Nodes.Resolve(ctx, "", ch.MediaServerID)
	if err != nil {
		d.mark(ctx, cmd, channels.CommandFailed, "", err.Error())
		return
	}
	res, err := d.node(ctx, cmd, rec, agentapi.TypeEngineProxyRemove, agentapi.ProxyRef{ID: string(ch.ChannelID)}, "stop channel "+string(ch.ChannelID))
	if err != nil && !isCode(res, engineapi.CodeProxyNotFound) {
		d.mark(ctx, cmd, channels.CommandFailed, res.CommandID, err.Error())
		return
	}
	d.mark(ctx, cmd, channels.CommandSucceeded, res.CommandID, "")
	if _, err := d.Channels.SetCommandState(ctx, system, ch.ChannelID, cmd.CommandID, channels.ActualOffline, "stopped"); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording Offline failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
}

// nodeOutcome is what became of a node command.
type nodeOutcome struct {
	CommandID string
	Code      string
}

func isCode(o nodeOutcome, code string) bool { return o.Code == code }

// node runs one node command on the media server's agent: created, marked
// Dispatched on the stream command, and waited for.
func (d *Dispatcher) node(ctx context.Context, cmd channels.StreamCommand, rec *nodes.Record, typ string, payload any, reason string) (nodeOutcome, error) {
	if rec.Status != nodes.StatusOnline {
		return nodeOutcome{}, fmt.Errorf("media server %s is %s", rec.MediaServerID, rec.Status)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nodeOutcome{}, err
	}
	wait := d.CommandWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	nc, _, err := d.Commands.Create(ctx, nodecommand.CreateRequest{NodeID: rec.NodeID, EngineNodeID: rec.NodeID, Type: typ, Payload: raw,
		IdempotencyKey: "stream-command:" + string(cmd.CommandID), Reason: reason, Actor: system, Timeout: 2 * wait, Guards: nodes.ActiveGuards(rec.NodeID)})
	if err != nil {
		return nodeOutcome{}, err
	}
	out := nodeOutcome{CommandID: nc.CommandID}
	d.mark(ctx, cmd, channels.CommandDispatched, nc.CommandID, "")
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done, err := d.Commands.Wait(wctx, nc.CommandID)
	if err != nil {
		return out, fmt.Errorf("node command %s on %s: %w", nc.CommandID, rec.MediaServerID, err)
	}
	if done.Status == nodecommand.Succeeded {
		return out, nil
	}
	if done.Error != nil {
		out.Code = done.Error.Code
		return out, fmt.Errorf("media server %s: %s: %s", rec.MediaServerID, done.Error.Code, done.Error.Message)
	}
	return out, fmt.Errorf("media server %s: node command %s ended %s", rec.MediaServerID, nc.CommandID, done.Status)
}

// place returns the channel's media server, choosing the least loaded
// online one (fewest streams, then lowest CPU) when it has none.
func (d *Dispatcher) place(ctx context.Context, ch *channels.Channel) (*nodes.Record, error) {
	if ch.MediaServerID != "" {
		rec, err := d.Nodes.Resolve(ctx, "", ch.MediaServerID)
		if err != nil {
			return nil, err
		}
		if rec.Status != nodes.StatusOnline {
			return nil, fmt.Errorf("media server %s is %s", rec.MediaServerID, rec.Status)
		}
		return rec, nil
	}
	best, err := leastLoaded(ctx, d.Nodes, d.Presence)
	if err != nil {
		return nil, err
	}
	if _, err := d.Channels.AssignMediaServer(ctx, system, ch.ChannelID, best.MediaServerID, best.NodeID); err != nil {
		return nil, err
	}
	return best, nil
}

// leastLoaded is the online media server with the fewest streams, then
// the lowest CPU.
func leastLoaded(ctx context.Context, ns *nodes.Service, presence *nodes.Presence) (*nodes.Record, error) {
	all, err := ns.List(ctx)
	if err != nil {
		return nil, err
	}
	type cand struct {
		rec     *nodes.Record
		streams int
		cpu     float64
	}
	var cands []cand
	for _, rec := range all {
		if rec.Status != nodes.StatusOnline || rec.Engine.Media != nodes.MediaOnline {
			continue
		}
		c := cand{rec: rec}
		if hb, _, ok := presence.Last(rec.NodeID); ok {
			c.streams, c.cpu = hb.Engine.Streams, hb.Host.CPUPercent
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return nil, errors.New("no media server is online to place the stream on")
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].streams != cands[j].streams {
			return cands[i].streams < cands[j].streams
		}
		return cands[i].cpu < cands[j].cpu
	})
	return cands[0].rec, nil
}

// reconcile starts again every channel that should run, is not paused and
// whose backoff has passed.
func (d *Dispatcher) reconcile(ctx context.Context) error {
	now := time.Now().UTC()
	rows, _, err := d.Channels.List(ctx, channels.Filter{DesiredState: channels.DesiredRunning, ActualState: channels.ActualRetrying, Page: 1, PageSize: 500})
	if err != nil {
		return err
	}
	var errs []error
	for _, ch := range rows {
		if ch.AutoRecoveryPaused || ch.Retry.NextRetryAt == nil || ch.Retry.NextRetryAt.After(now) {
			continue
		}
		_, _, err := d.Channels.Start(ctx, audit.Actor{Type: "system", ID: "auto-recovery"}, ch.ChannelID)
		switch {
		case err == nil, errors.Is(err, channels.ErrPending), errors.Is(err, channels.ErrDisabled), errors.Is(err, channels.ErrContended):
			// Changed under us; the next scan sees the new state.
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
