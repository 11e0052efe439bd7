package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/parallel"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// GB28181 history playback: a session is a device's recording of one
// channel over a time range, INVITEd with s=Playback into an RTP server
// of its own (app PlaybackApp, stream the session id). It ends when the
// device reports the end of the file (MediaStatus 121), hangs up, or is
// stopped; its playback leases end with it.

// PlaybackSessionPrefix holds one record per playback session.
const PlaybackSessionPrefix = "/gb28181/playback-sessions/"

// PlaybackApp is the app of every playback session's stream.
const PlaybackApp = "gb-playback"

// Playback session states.
const (
	PlaybackPlaying = "Playing"
	PlaybackEnded   = "Ended"
)

// Errors of playback sessions.
var (
	// ErrPlaybackNotFound: 404 not_found.
	ErrPlaybackNotFound = fault.New(fault.NotFound, "not_found", "no such GB28181 playback session")
	// ErrPlaybackEnded: the session is over; 409 stream_not_ready.
	ErrPlaybackEnded = fault.New(fault.Conflict, "stream_not_ready", "the GB28181 playback session has ended")
	// ErrNoMediaServer: no media server can take the stream; 503.
	ErrNoMediaServer = fault.NewRetryable(fault.Unavailable, "unavailable", "no media server is online for the stream")
	// ErrPlaybackInvalid: 400 invalid_body.
	ErrPlaybackInvalid = fault.New(fault.Invalid, "invalid_body", "invalid playback request")
)

// PlaybackSession is the replicated record of a playback session.
type PlaybackSession struct {
	SessionID     string     `json:"sessionId"`
	DeviceID      string     `json:"deviceId"`
	ChannelID     string     `json:"channelId"`
	StartTime     time.Time  `json:"startTime"`
	EndTime       time.Time  `json:"endTime"`
	MediaServerID string     `json:"mediaServerId"`
	Vhost         string     `json:"vhost"`
	App           string     `json:"app"`
	Stream        string     `json:"stream"`
	Transport     string     `json:"transport"`
	State         string     `json:"state"`
	EndReason     string     `json:"endReason,omitempty"`
	NodeID        string     `json:"nodeId"`
	CreatedAt     time.Time  `json:"createdAt"`
	EndedAt       *time.Time `json:"endedAt,omitempty"`

	// What ending the session undoes, so that any node can (the one
	// that started it may be gone); never shown.
	EngineNodeID string `json:"engineNodeId,omitempty"`
	LeaseID      string `json:"leaseId,omitempty"`
	Port         int    `json:"port,omitempty"`
	ServerID     string `json:"serverId,omitempty"`
	CallID       string `json:"callId,omitempty"`
	// Holder is the control node holding the session's SIP dialog.
	Holder string `json:"holder,omitempty"`
}

// live is what undoing the recorded session needs.
func (s *PlaybackSession) live() *gbLive {
	l := &gbLive{rec: &nodes.Record{NodeID: s.EngineNodeID, MediaServerID: s.MediaServerID}}
	l.lease.LeaseID, l.lease.Port, l.server.ID = s.LeaseID, s.Port, s.ServerID
	if s.CallID != "" {
		l.session = &gb28181.MediaSession{DeviceID: gb28181.DeviceID(s.DeviceID), ChannelID: s.ChannelID, CallID: s.CallID, NodeID: s.Holder}
	}
	return l
}

// PlaybackRequest asks for a device's recording of a channel.
type PlaybackRequest struct {
	DeviceID, ChannelID string
	Start, End          time.Time
	// MediaServerID is where the stream goes; empty picks the least loaded.
	MediaServerID string
	// TCP has the device send over TCP (the engine listens) instead of UDP.
	TCP bool
	// TCPActive (with TCP) has the engine connect to the address the
	// device answers with instead of listening.
	TCPActive bool
	Timeout   time.Duration
}

// GBPlayback runs the playback sessions of the devices whose SIP
// transport this control node holds.
type GBPlayback struct {
	Store    store.Store
	Nodes    *nodes.Service
	Presence *nodes.Presence
	Commands *nodecommand.Service
	GB       GBInviter
	// EndLeases ends the playback leases of an ended session.
	EndLeases func(ctx context.Context, sessionID, mediaServerID, reason string) error
	NodeID    string
	Log       *zap.Logger
	// CommandWait bounds one node command (default 30 s).
	CommandWait time.Duration
	// RTPTimeout is how long a session's RTP server waits without media
	// (default 15 s).
	RTPTimeout time.Duration

	mu     sync.Mutex
	live   map[string]*gbLive
	byCall map[string]string
}

// Start leases an RTP port on a media server, opens the engine's RTP
// server for the session's stream and INVITEs the device for the range.
// The stream is Online once the device's first frames reach the engine.
func (p *GBPlayback) Start(ctx context.Context, r PlaybackRequest) (*PlaybackSession, error) {
	if !gb28181.ValidCode(r.DeviceID) || !gb28181.ValidCode(r.ChannelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId are 20-digit GB28181 codes", ErrPlaybackInvalid)
	}
	if !r.End.After(r.Start) || r.End.Sub(r.Start) > gb28181.MaxRecordSpan {
		return nil, fmt.Errorf("%w: endTime must be after startTime and within %s of it", ErrPlaybackInvalid, gb28181.MaxRecordSpan)
	}
	var rec *nodes.Record
	var err error
	if r.MediaServerID != "" {
		if rec, err = p.Nodes.Resolve(ctx, "", r.MediaServerID); err != nil {
			return nil, err
		}
		if rec.Status != nodes.StatusOnline {
			return nil, fmt.Errorf("%w: media server %s is %s", ErrNoMediaServer, rec.MediaServerID, rec.Status)
		}
	} else if rec, err = leastLoaded(ctx, p.Nodes, p.Presence); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMediaServer, err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	s := &PlaybackSession{SessionID: id.String(), DeviceID: r.DeviceID, ChannelID: r.ChannelID, StartTime: r.Start.UTC(), EndTime: r.End.UTC(),
		MediaServerID: rec.MediaServerID, Vhost: channels.DefaultVhost, App: PlaybackApp, Stream: id.String(), Transport: gb28181.MediaUDP,
		State: PlaybackPlaying, NodeID: p.NodeID, CreatedAt: time.Now().UTC()}
	switch {
	case r.TCP && r.TCPActive:
		s.Transport = gb28181.MediaTCPActive
	case r.TCP:
		s.Transport = gb28181.MediaTCPPassive
	}
	live := &gbLive{rec: rec}
	step := func(name, typ string, payload, out any) error {
		return runStep(ctx, p.Commands, p.CommandWait, rec, "gb28181-playback:"+s.SessionID+":"+name, "GB28181 playback "+s.SessionID+": "+name, typ, payload, out)
	}
	undo := func() { p.undo(context.WithoutCancel(ctx), s.SessionID, live) }
	if err := step("lease", agentapi.TypeRTPLease, agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "gb28181",
		StreamID: s.App + "/" + s.Stream, TTLSeconds: 24 * 3600}, &live.lease); err != nil {
		return nil, fmt.Errorf("leasing an RTP port on %s: %w", rec.MediaServerID, err)
	}
	ssrc := p.GB.NewSSRC(true)
	open := func(peer string, ssrc uint32) error {
		if err := step("open", agentapi.TypeEngineRTPServerOpen, engineapi.OpenRTPServerRequest{Vhost: s.Vhost, App: s.App, Stream: s.Stream,
			Port: live.lease.Port, Transport: s.Transport, Peer: peer, SSRC: ssrc, TimeoutSeconds: gbTimeoutSeconds(p.RTPTimeout)}, &live.server); err != nil {
			undo()
			return fmt.Errorf("opening the RTP server on %s: %w", rec.MediaServerID, err)
		}
		return nil
	}
	// TCP active: the engine dials the address the device answers with,
	// so its RTP server opens after the answer.
	if s.Transport != gb28181.MediaTCPActive {
		if err := open("", ssrc); err != nil {
			return nil, err
		}
	}
	host, _, _ := net.SplitHostPort(rec.Engine.RTSPAddr)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	session, err := p.GB.Invite(ctx, gb28181.InviteRequest{DeviceID: gb28181.DeviceID(r.DeviceID), ChannelID: r.ChannelID, MediaIP: host,
		MediaPort: live.lease.Port, Transport: s.Transport, SSRC: ssrc, Playback: true, Start: r.Start.Unix(), End: r.End.Unix(), Timeout: r.Timeout})
	if err != nil {
		undo()
		return nil, err
	}
	live.session = session
	if s.Transport == gb28181.MediaTCPActive {
		// The SSRC the device answers with (y=) is the one it sends.
		if session.SSRC != 0 {
			ssrc = session.SSRC
		}
		if err := open(session.DeviceMedia, ssrc); err != nil {
			return nil, err
		}
	}
	s.EngineNodeID, s.LeaseID, s.Port, s.ServerID = rec.NodeID, live.lease.LeaseID, live.lease.Port, live.server.ID
	s.CallID, s.Holder = session.CallID, session.NodeID
	if err := p.put(ctx, s); err != nil {
		p.undo(context.WithoutCancel(ctx), s.SessionID, live)
		return nil, err
	}
	p.mu.Lock()
	if p.live == nil {
		p.live, p.byCall = map[string]*gbLive{}, map[string]string{}
	}
	p.live[s.SessionID] = live
	p.byCall[session.CallID] = s.SessionID
	p.mu.Unlock()
	p.Log.Info("GB28181 playback started", zap.String("session", s.SessionID), zap.String("deviceId", r.DeviceID),
		zap.String("channelId", r.ChannelID), zap.Time("start", r.Start), zap.Time("end", r.End), zap.String("mediaServer", rec.MediaServerID))
	return s, nil
}

// MediaEnded ends the session of a Call-ID the device ended (MediaStatus
// 121 or its BYE); the gb28181 service calls it.
func (p *GBPlayback) MediaEnded(callID, why string) {
	p.mu.Lock()
	id, ok := p.byCall[callID]
	p.mu.Unlock()
	if !ok {
		return
	}
	go func() {
		if err := p.Stop(context.Background(), id, why); err != nil && !errors.Is(err, ErrPlaybackEnded) {
			p.Log.Warn("ending a GB28181 playback session failed", zap.String("session", id), zap.Error(err))
		}
	}()
}

// Stop ends a session: BYE, the RTP server closed, the port released, the
// record Ended and its leases ended. Any node may: what to undo is in the
// record when this node did not start the session.
func (p *GBPlayback) Stop(ctx context.Context, sessionID, reason string) error {
	p.mu.Lock()
	live := p.live[sessionID]
	delete(p.live, sessionID)
	if live != nil && live.session != nil {
		delete(p.byCall, live.session.CallID)
	}
	p.mu.Unlock()
	s, err := p.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if s.State == PlaybackEnded {
		if live != nil {
			// Ended elsewhere (its holder died): what is left here goes,
			// under the same keys, so nothing runs twice.
			p.undo(ctx, sessionID, live)
		}
		return fmt.Errorf("%w: %s", ErrPlaybackEnded, sessionID)
	}
	if live == nil {
		live = s.live()
	}
	return p.end(ctx, s, live, reason)
}

// end undoes a Playing session and records its end, once. Its leases end
// before the record says Ended, so whoever reads Ended finds them over
// too, and once more after, for a lease taken in between.
func (p *GBPlayback) end(ctx context.Context, s *PlaybackSession, live *gbLive, reason string) error {
	p.undo(ctx, s.SessionID, live)
	endLeases := func() error {
		if p.EndLeases == nil {
			return nil
		}
		return p.EndLeases(ctx, s.SessionID, s.MediaServerID, "the GB28181 playback session ended: "+reason)
	}
	if err := endLeases(); err != nil {
		return err
	}
	now := time.Now().UTC()
	_, err := store.UpdateRecord(ctx, p.Store, PlaybackSessionPrefix+s.SessionID, func(cur *PlaybackSession) (*PlaybackSession, []store.Op, []store.Compare, error) {
		if cur == nil || cur.State == PlaybackEnded {
			return nil, nil, nil, ErrPlaybackEnded
		}
		cur.State, cur.EndReason, cur.EndedAt = PlaybackEnded, reason, &now
		*s = *cur
		return cur, nil, nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s", err, s.SessionID)
	}
	p.Log.Info("GB28181 playback ended", zap.String("session", s.SessionID), zap.String("reason", reason))
	return endLeases()
}

// EndGB ends the Playing sessions that depend on what is gone: their
// dialog's holder or the node running them, or their device. No BYE is
// sent through a dead holder (nobody can send it).
func (p *GBPlayback) EndGB(ctx context.Context, gone gb28181.Gone) error {
	ss, err := store.Records[PlaybackSession](ctx, p.Store, PlaybackSessionPrefix, store.Local)
	if err != nil {
		return err
	}
	var ending []*PlaybackSession
	for i := range ss {
		if s := &ss[i]; s.State == PlaybackPlaying && gone.Ends(s.Holder, s.NodeID, gb28181.DeviceID(s.DeviceID)) {
			ending = append(ending, s)
		}
	}
	// Concurrently, as the live sessions (Dispatcher.EndGB).
	return parallel.Each(ending, endGBAtOnce, func(s *PlaybackSession) error {
		p.mu.Lock()
		delete(p.live, s.SessionID)
		delete(p.byCall, s.CallID)
		p.mu.Unlock()
		live := s.live()
		if gone.Node != "" && s.Holder == gone.Node {
			live.session = nil
		}
		if err := p.end(ctx, s, live, gone.Reason); err != nil && !errors.Is(err, ErrPlaybackEnded) {
			return err
		}
		return nil
	})
}

// undo sends the BYE, closes the RTP server and releases the port; each
// step is logged and the rest still run.
func (p *GBPlayback) undo(ctx context.Context, sessionID string, live *gbLive) {
	step := func(name, typ string, payload any) error {
		return runStep(ctx, p.Commands, p.CommandWait, live.rec, "gb28181-playback:"+sessionID+":"+name, "GB28181 playback "+sessionID+": "+name, typ, payload, nil)
	}
	if live.session != nil {
		if err := p.GB.Bye(ctx, live.session); err != nil {
			p.Log.Info("GB28181 BYE failed", zap.String("session", sessionID), zap.Error(err))
		}
	}
	if live.server.ID != "" {
		if err := step("close", agentapi.TypeEngineRTPServerClose, agentapi.RTPServerRef{ID: live.server.ID}); err != nil && !errors.Is(err, errNodeCode) {
			p.Log.Info("closing a GB28181 playback RTP server failed", zap.String("server", live.server.ID), zap.Error(err))
		}
	}
	if live.lease.LeaseID != "" {
		if err := step("release", agentapi.TypeRTPRelease, agentapi.ReleaseRequest{LeaseID: live.lease.LeaseID}); err != nil {
			p.Log.Info("releasing a GB28181 playback RTP port failed", zap.Int("port", live.lease.Port), zap.Error(err))
		}
	}
}

func (p *GBPlayback) put(ctx context.Context, s *PlaybackSession) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = p.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(PlaybackSessionPrefix+s.SessionID, b)}})
	return err
}

// Get reads a playback session.
func (p *GBPlayback) Get(ctx context.Context, sessionID string) (*PlaybackSession, error) {
	if _, err := uuid.Parse(sessionID); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrPlaybackNotFound, sessionID)
	}
	kv, _, err := store.Get(ctx, p.Store, PlaybackSessionPrefix+sessionID, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %s", ErrPlaybackNotFound, sessionID)
	}
	s, err := store.Decode[PlaybackSession](kv)
	if err != nil {
		return nil, err
	}
	return &s, nil
}
