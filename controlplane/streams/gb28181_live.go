package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// GBInviter invites GB28181 devices; *gb28181.Service is one.
type GBInviter interface {
	Invite(ctx context.Context, r gb28181.InviteRequest) (*gb28181.MediaSession, error)
	Bye(ctx context.Context, m *gb28181.MediaSession) error
	// ByeChannel ends the live dialogs the store records for a device
	// channel, wherever they are held.
	ByeChannel(ctx context.Context, id gb28181.DeviceID, channelID string) error
	NewSSRC(playback bool) uint32
}

// gbLive is a GB28181 channel's running media: its port lease, RTP server
// and SIP dialog, kept by the leader's dispatcher to undo them on stop.
type gbLive struct {
	// cmd is the start command; undoing a live that ended by itself runs
	// its steps under this command's keys.
	cmd     channels.StreamCommand
	channel channels.ChannelID
	rec     *nodes.Record
	lease   agentapi.Lease
	server  engineapi.RTPServerInfo
	session *gb28181.MediaSession
}

// gbSessions are the running GB28181 channels, by channel.
type gbSessions struct {
	mu sync.Mutex
	m  map[channels.ChannelID]*gbLive
}

// defaultGBRTPTimeout is how long an RTP server waits for media before it
// closes and reports on_rtp_server_timeout, unless configured.
const defaultGBRTPTimeout = 15 * time.Second

// gbTimeoutSeconds is an RTP server's wait for media in whole seconds.
func gbTimeoutSeconds(t time.Duration) int {
	if t <= 0 {
		t = defaultGBRTPTimeout
	}
	return int(max(t/time.Second, 1))
}

// startGB starts a GB28181 channel: an RTP port leased on the media
// server's agent, the engine's RTP server opened on it, and the device
// INVITEd to send there. The channel goes Online when the first frames
// reach the engine's hub (on_stream_changed), as RTSP channels do.
func (d *Dispatcher) startGB(ctx context.Context, cmd channels.StreamCommand, ch *channels.Channel, fail func(string)) {
	if d.GB == nil {
		fail("this control node runs no GB28181 SIP server (set --gb28181-password-file)")
		return
	}
	rec, err := d.place(ctx, ch)
	if err != nil {
		fail(err.Error())
		return
	}
	if _, err := d.Channels.SetCommandState(ctx, system, ch.ChannelID, cmd.CommandID, channels.ActualStarting,
		"inviting GB28181 device "+ch.DeviceID+" to media server "+rec.MediaServerID+"; waiting for media"); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording Starting failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
	// A session still held for the channel (its stream was lost and
	// auto-recovery starts it again before its RTP server's timeout was
	// reported) is ended first: its dialog gets a BYE, its port goes back.
	//
	// A channel that is Online with its session shares it: a second start
	// answers without a second INVITE (the channel's starts are not
	// counted, so its one stop ends the session).
	old, err := d.takeGBLive(ctx, ch.ChannelID)
	if err != nil {
		fail("reading the channel's GB28181 session: " + err.Error())
		return
	}
	shared := old != nil && old.session != nil && ch.ActualState == channels.ActualOnline
	if shared {
		d.keepGBLive(old)
		d.Log.Info("GB28181 channel already playing; the start shares its session", zap.String("channel", string(ch.ChannelID)),
			zap.String("callId", old.session.CallID))
		d.mark(ctx, cmd, channels.CommandSucceeded, "", "")
		return
	}
	if old != nil {
		d.undoGB(context.WithoutCancel(ctx), old.cmd, old)
	} else if err := d.GB.ByeChannel(ctx, gb28181.DeviceID(ch.DeviceID), ch.DeviceChannelID); err != nil {
		// Dialogs recorded for the channel that this dispatcher does not
		// know were started by an earlier leader: ended before a new one.
		d.Log.Info("ending earlier GB28181 dialogs failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
	live := &gbLive{cmd: cmd, channel: ch.ChannelID, rec: rec}
	undo := func() { d.undoGB(context.WithoutCancel(ctx), cmd, live) }
	if err := d.step(ctx, cmd, rec, "lease", agentapi.TypeRTPLease, agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "gb28181",
		StreamID: ch.App + "/" + ch.Stream, TTLSeconds: 24 * 3600}, &live.lease); err != nil {
		fail("leasing an RTP port: " + err.Error())
		return
	}
	transport, ssrc, timeout := gb28181.MediaUDP, d.GB.NewSSRC(false), 10*time.Second
	if cmd.GB != nil && cmd.GB.TCP {
		transport = gb28181.MediaTCPPassive
	}
	if cmd.GB != nil && cmd.GB.TimeoutSeconds > 0 {
		timeout = time.Duration(cmd.GB.TimeoutSeconds) * time.Second
	}
	if err := d.step(ctx, cmd, rec, "open", agentapi.TypeEngineRTPServerOpen, engineapi.OpenRTPServerRequest{Vhost: ch.Vhost, App: ch.App,
		Stream: ch.Stream, Port: live.lease.Port, Transport: transport, SSRC: ssrc, TimeoutSeconds: gbTimeoutSeconds(d.GBRTPTimeout)}, &live.server); err != nil {
		undo()
		fail("opening the RTP server: " + err.Error())
		return
	}
	host, _, _ := net.SplitHostPort(rec.Engine.RTSPAddr)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	session, err := d.GB.Invite(ctx, gb28181.InviteRequest{DeviceID: gb28181.DeviceID(ch.DeviceID), ChannelID: ch.DeviceChannelID,
		MediaIP: host, MediaPort: live.lease.Port, Transport: transport, SSRC: ssrc, Timeout: timeout})
	if err != nil {
		undo()
		fail(err.Error())
		return
	}
	live.session = session
	if err := d.putGBLive(ctx, live); err != nil {
		undo()
		fail("recording the GB28181 session: " + err.Error())
		return
	}
	d.keepGBLive(live)
	d.mark(ctx, cmd, channels.CommandSucceeded, "", "")
}

// keepGBLive remembers a running session (its record is the truth; this
// spares a read on the leader that started it).
func (d *Dispatcher) keepGBLive(live *gbLive) {
	d.gb.mu.Lock()
	if d.gb.m == nil {
		d.gb.m = map[channels.ChannelID]*gbLive{}
	}
	d.gb.m[live.channel] = live
	d.gb.mu.Unlock()
}

// stopGB sends the BYE, closes the RTP server and releases the port.
func (d *Dispatcher) stopGB(ctx context.Context, cmd channels.StreamCommand, ch *channels.Channel) {
	live, err := d.takeGBLive(ctx, ch.ChannelID)
	if err != nil {
		d.Log.Warn("reading a GB28181 live session failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
	if live != nil {
		// Under the start's keys, so a repeated undo repeats nothing.
		d.undoGB(ctx, live.cmd, live)
	}
	if err := d.GB.ByeChannel(ctx, gb28181.DeviceID(ch.DeviceID), ch.DeviceChannelID); err != nil {
		// Dialogs recorded for the channel that no session record names
		// (a BYE that failed above, a start cut short) end here.
		d.Log.Info("ending GB28181 dialogs failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
	d.mark(ctx, cmd, channels.CommandSucceeded, "", "")
	if _, err := d.Channels.SetCommandState(ctx, system, ch.ChannelID, cmd.CommandID, channels.ActualOffline, "stopped"); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording Offline failed", zap.String("channel", string(ch.ChannelID)), zap.Error(err))
	}
}

// undoGB ends what a start set up, in reverse; each step is logged and
// the rest still run. The session's record goes last.
func (d *Dispatcher) undoGB(ctx context.Context, cmd channels.StreamCommand, live *gbLive) {
	defer d.dropGBLive(ctx, live.channel, live.cmd.CommandID)
	if live.session != nil {
		if err := d.GB.Bye(ctx, live.session); err != nil {
			d.Log.Info("GB28181 BYE failed", zap.String("device", string(live.session.DeviceID)), zap.Error(err))
		}
	}
	if live.server.ID != "" {
		if err := d.step(ctx, cmd, live.rec, "close", agentapi.TypeEngineRTPServerClose, agentapi.RTPServerRef{ID: live.server.ID}, nil); err != nil &&
			!errors.Is(err, errNodeCode) {
			d.Log.Info("closing a GB28181 RTP server failed", zap.String("server", live.server.ID), zap.Error(err))
		}
	}
	if live.lease.LeaseID != "" {
		if err := d.step(ctx, cmd, live.rec, "release", agentapi.TypeRTPRelease, agentapi.ReleaseRequest{LeaseID: live.lease.LeaseID}, nil); err != nil {
			d.Log.Info("releasing a GB28181 RTP port failed", zap.Int("port", live.lease.Port), zap.Error(err))
		}
	}
}

// errNodeCode marks a node command that failed with an error code.
var errNodeCode = errors.New("node command failed")

// step runs one node command of a stream command, with its own
// idempotency key, and decodes its result into out.
func (d *Dispatcher) step(ctx context.Context, cmd channels.StreamCommand, rec *nodes.Record, name, typ string, payload, out any) error {
	return runStep(ctx, d.Commands, d.CommandWait, rec, "stream-command:"+string(cmd.CommandID)+":"+name,
		"GB28181 channel "+string(cmd.ChannelID)+": "+name, typ, payload, out)
}

// runStep creates one node command for a media server's agent, waits up
// to wait (default 30 s) for it and decodes its result into out.
func runStep(ctx context.Context, cmds *nodecommand.Service, wait time.Duration, rec *nodes.Record, key, reason, typ string, payload, out any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if wait <= 0 {
		wait = 30 * time.Second
	}
	nc, _, err := cmds.Create(ctx, nodecommand.CreateRequest{NodeID: rec.NodeID, EngineNodeID: rec.NodeID, Type: typ, Payload: raw,
		IdempotencyKey: key, Reason: reason, Actor: system, Timeout: 2 * wait, Guards: nodes.ActiveGuards(rec.NodeID)})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done, err := cmds.Wait(wctx, nc.CommandID)
	if err != nil {
		return fmt.Errorf("node command %s on %s: %w", nc.CommandID, rec.MediaServerID, err)
	}
	if done.Status != nodecommand.Succeeded {
		if done.Error != nil {
			return fmt.Errorf("%w: media server %s: %s: %s", errNodeCode, rec.MediaServerID, done.Error.Code, done.Error.Message)
		}
		return fmt.Errorf("media server %s: node command %s ended %s", rec.MediaServerID, nc.CommandID, done.Status)
	}
	if out != nil && len(done.Result) > 0 {
		if err := json.Unmarshal(done.Result, out); err != nil {
			return fmt.Errorf("node command %s result: %w", nc.CommandID, err)
		}
	}
	return nil
}

// RTPServerTimeout handles on_rtp_server_timeout for a live GB28181
// channel: the device stopped sending (or never sent) to the RTP server of
// the channel's current session. The session is ended (BYE, port
// released) and, when no media had arrived, the start counts as a failed
// attempt so the channel is Retrying (and auto-recovery INVITEs again
// after the backoff) instead of Starting forever. A stream that had
// arrived was already counted when it went offline (on_stream_changed).
// It reports whether the server was one of the dispatcher's.
func (d *Dispatcher) RTPServerTimeout(ctx context.Context, h engineapi.RTPServerTimeoutHook) bool {
	live, err := d.gbLiveByServer(ctx, h.ID)
	if err != nil {
		d.Log.Warn("finding the GB28181 session of an RTP server failed", zap.String("server", h.ID), zap.Error(err))
	}
	if live == nil {
		return false
	}
	device := ""
	if live.session != nil {
		device = string(live.session.DeviceID)
	}
	d.Log.Info("GB28181 live stream timed out", zap.String("channel", string(live.channel)), zap.String("device", device),
		zap.String("server", h.ID), zap.Bool("published", h.Published))
	d.undoGB(ctx, live.cmd, live)
	if h.Published {
		return true
	}
	cause := fmt.Sprintf("no media from GB28181 device %s within %d s of the INVITE (RTP server timeout)", device, h.TimeoutSeconds)
	if _, err := d.Channels.RecordFailedAttempt(ctx, channels.Actor{Type: "engine", ID: live.rec.MediaServerID}, live.channel, cause); err != nil && ctx.Err() == nil {
		d.Log.Warn("recording a GB28181 RTP timeout failed", zap.String("channel", string(live.channel)), zap.Error(err))
	}
	return true
}
