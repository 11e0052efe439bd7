// Package enginehooks answers the hooks the media engines send to the
// control plane (through the agent port, authenticated by the node's
// certificate): on_play is decided by the playback grants, on_publish by
// the channel catalogue, on_stream_changed drives the stream sessions, and
// every hook is also kept as an engine.webhook.* event, which the webhook
// inbox lists. Decisions are synchronous; the inbox writes are batched in the
// background so a burst of players costs a few store writes, not one each.
package enginehooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/agentport"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/controlplane/rtspauth"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Deps are what the answers need.
type Deps struct {
	Events   *events.Service
	Streams  *streams.Service
	Playback *playback.Service
	Channels *channels.Service
	RTSPAuth *rtspauth.Service
	// Recording indexes the files on_record_mp4 reports.
	Recording *recording.Service
	// Rooms decides the hooks of meeting-room streams (app rooms.App).
	Rooms *rooms.Service
	Store store.Store
	Log   *zap.Logger
	// RTPServerTimeout is told of an RTP server that closed because its
	// device stopped sending (nil: nobody is).
	RTPServerTimeout func(h engineapi.RTPServerTimeoutHook)
}

// Service implements agentport.HookInbox.
type Service struct {
	Deps
	queue   chan queued
	dropped atomic.Uint64
}

type queued struct {
	name, mediaServerID string
	raw                 []byte
}

// queueSize bounds the hooks waiting for the inbox; beyond it hooks are
// dropped from the inbox (counted and logged), never from the decisions.
const queueSize = 10000

// batchSize is how many hooks one inbox Txn carries at most.
const batchSize = 64

// batchLinger is how long a batch waits for more hooks after its first: a
// burst of players becomes a Txn every few milliseconds instead of one per
// hook, and the inbox lags by at most this. It is short because the store
// applies a Txn in one go on one core, and while it does the synchronous
// decisions have one core fewer: at 1,000 on_play hooks/s, Txns of about
// 50 events (50 ms) took 3-4 ms to apply and made about 100 of 20,000
// validations miss 2 ms, Txns of about 10 (10 ms) about 50 (leasebench,
// runs taken in turns). The cost is at most one inbox Txn per linger.
const batchLinger = 10 * time.Millisecond

// New makes the service; Run drains its inbox queue.
func New(d Deps) *Service {
	return &Service{Deps: d, queue: make(chan queued, queueSize)}
}

func answer(allow bool, reason string) engineapi.HookAnswer {
	return engineapi.HookAnswer{Allow: allow, Reason: reason}
}

// Receive decides a hook and queues it for the inbox.
func (s *Service) Receive(ctx context.Context, h agentport.Hook) (engineapi.HookAnswer, error) {
	ans, err := s.decide(ctx, h)
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	select {
	case s.queue <- queued{name: h.HookName, mediaServerID: h.MediaServerID, raw: h.Body}:
	default:
		if s.dropped.Add(1)%1000 == 1 {
			s.Log.Warn("engine hook inbox is full; hooks are not being kept", zap.Uint64("dropped", s.dropped.Load()))
		}
	}
	return ans, nil
}

func (s *Service) decide(ctx context.Context, h agentport.Hook) (engineapi.HookAnswer, error) {
	name, err := events.NormalizeHookName(h.HookName)
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	switch name {
	case "OnPlay":
		var req engineapi.PlayHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_play body"), nil
		}
		if req.App == rooms.App {
			return s.roomHook(ctx, false, req.StreamRef, req.Protocol, req.RemoteAddr, req.Params)
		}
		if user := req.Params[engineapi.RTSPUserParam]; user != "" {
			// The engine checked this user's Digest answer against the
			// password on_rtsp_auth gave it for this media server: an RTSP
			// client with managed credentials (another engine, an operator).
			return answer(true, ""), nil
		}
		d, err := s.Playback.AuthorizePlay(ctx, playback.PlayRequest{MediaServerID: h.MediaServerID, Vhost: req.Vhost, App: req.App,
			Stream: req.Stream, Protocol: req.Protocol, Params: req.Params, RemoteAddr: req.RemoteAddr})
		if err != nil {
			return engineapi.HookAnswer{}, err
		}
		secs := int(d.CacheFor / time.Second)
		return engineapi.HookAnswer{Allow: d.Allow, Reason: d.Reason, LeaseID: d.LeaseID, CacheSeconds: &secs}, nil
	case "OnPublish":
		var req engineapi.PublishHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_publish body"), nil
		}
		if req.App == rooms.App {
			return s.roomHook(ctx, true, req.StreamRef, req.Protocol, req.RemoteAddr, req.Params)
		}
		return s.allowPublish(ctx, req)
	case "OnStreamChanged":
		var req engineapi.StreamChangedHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_stream_changed body"), nil
		}
		if _, err := s.Streams.Apply(ctx, streamChange(h, req)); err != nil {
			return engineapi.HookAnswer{}, err
		}
		if req.App == rooms.App && s.Rooms != nil {
			report := s.Rooms.StreamEnded
			if req.Registered {
				report = s.Rooms.StreamReady
			}
			if err := report(ctx, req.Stream); err != nil {
				return engineapi.HookAnswer{}, err
			}
		}
		return answer(true, ""), nil
	case "OnFlowReport":
		var req engineapi.FlowReportHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_flow_report body"), nil
		}
		if s.Rooms != nil {
			for _, p := range req.Players {
				// A WHEP viewer of a room stream that left: its
				// subscription ends with it (a killed subscriber sends
				// no DELETE).
				if p.Final && p.App == rooms.App && p.Protocol == rooms.WebRTCProtocol && p.Viewer != "" {
					if err := s.Rooms.SubscriberSessionEnded(ctx, p.Stream, p.Viewer); err != nil {
						return engineapi.HookAnswer{}, err
					}
				}
			}
		}
		return answer(true, ""), nil
	case "OnRtspAuth":
		var req engineapi.RTSPAuthHook
		if err := json.Unmarshal(h.Body, &req); err != nil || req.User == "" {
			return answer(false, "malformed on_rtsp_auth body"), nil
		}
		pw, err := s.RTSPAuth.Password(ctx, h.MediaServerID, req.User)
		if errors.Is(err, rtspauth.ErrNotFound) || errors.Is(err, rtspauth.ErrInvalid) {
			return answer(false, "no RTSP credential for this user on this media server"), nil
		}
		if err != nil {
			return engineapi.HookAnswer{}, err
		}
		return engineapi.HookAnswer{Allow: true, Password: pw}, nil
	case "OnRecordMp4":
		var req engineapi.RecordMP4Hook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_record_mp4 body"), nil
		}
		if _, _, err := s.Recording.FileCompleted(ctx, h.MediaServerID, h.NodeID, req); err != nil {
			if recording.IsRefusal(err) {
				// A report that can never be indexed is answered, not
				// retried for ever; the inbox keeps it.
				s.Log.Warn("on_record_mp4 not indexed", zap.String("mediaServerId", h.MediaServerID), zap.Error(err))
				return answer(false, err.Error()), nil
			}
			return engineapi.HookAnswer{}, err
		}
		return answer(true, ""), nil
	case "OnRtpServerTimeout":
		var req engineapi.RTPServerTimeoutHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_rtp_server_timeout body"), nil
		}
		if s.RTPServerTimeout != nil {
			s.RTPServerTimeout(req)
		}
		return answer(true, ""), nil
	case "OnStreamNoneReader":
		var req engineapi.StreamNoneReaderHook
		if err := json.Unmarshal(h.Body, &req); err != nil {
			return answer(false, "malformed on_stream_none_reader body"), nil
		}
		return s.noneReader(ctx, req)
	}
	return answer(true, ""), nil
}

// allowPublish admits an external publisher (RTSP push) only on a path no
// channel claims: a channel's stream is pulled by the platform, and a
// pusher there would collide with it.
func (s *Service) allowPublish(ctx context.Context, req engineapi.PublishHook) (engineapi.HookAnswer, error) {
	ch, err := s.Channels.ByStream(ctx, req.Vhost, req.App, req.Stream)
	if err != nil && !errors.Is(err, channels.ErrNotFound) {
		return engineapi.HookAnswer{}, err
	}
	if ch != nil && ch.Protocol == channels.ProtocolGB28181 && req.Protocol == "gb28181" {
		// The device's media through the RTP server the platform opened
		// for this channel's INVITE: the engine publishes it, nobody else
		// can (an RTSP pusher's protocol is not gb28181).
		return answer(true, ""), nil
	}
	if req.App == streams.PlaybackApp && req.Protocol != "gb28181" {
		return answer(false, "app "+req.App+" holds GB28181 playback sessions, which only their devices publish"), nil
	}
	if ch != nil {
		return answer(false, fmt.Sprintf("%s/%s is channel %s's stream, which the platform pulls", req.App, req.Stream, ch.ChannelID)), nil
	}
	return answer(true, ""), nil
}

// roomHook decides a meeting room stream's player or publisher by the
// room's own ticket: no lease, channel or RTSP credential admits anyone
// there. The answer is never cached by the engine (the ticket's
// participant may leave at any moment).
func (s *Service) roomHook(ctx context.Context, publish bool, ref engineapi.StreamRef, protocol, remoteAddr string,
	params map[string]string) (engineapi.HookAnswer, error) {
	if s.Rooms == nil {
		return answer(false, "meeting rooms are not served here"), nil
	}
	ok, reason, err := s.Rooms.AuthorizeEngine(ctx, rooms.EngineRequest{Publish: publish, Vhost: ref.Vhost, Stream: ref.Stream, Protocol: protocol,
		Ticket: params[playback.TicketParam], RemoteAddr: remoteAddr})
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	zero := 0
	return engineapi.HookAnswer{Allow: ok, Reason: reason, CacheSeconds: &zero}, nil
}

// noneReader keeps a channel's stream while its owner wants it running (or
// asked to keep pulling without players); anything else may close.
func (s *Service) noneReader(ctx context.Context, req engineapi.StreamNoneReaderHook) (engineapi.HookAnswer, error) {
	ch, err := s.Channels.ByStream(ctx, req.Vhost, req.App, req.Stream)
	if errors.Is(err, channels.ErrNotFound) {
		// A pushed stream belongs to its publisher; do not cut it.
		return answer(true, ""), nil
	}
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	keep := ch.DesiredState == channels.DesiredRunning || ch.NoPlayerBreak || ch.AutoRecord
	return engineapi.HookAnswer{Allow: true, Close: !keep}, nil
}

func streamChange(h agentport.Hook, req engineapi.StreamChangedHook) streams.Change {
	c := streams.Change{MediaServerID: h.MediaServerID, NodeID: h.NodeID, Vhost: req.Vhost, App: req.App, Stream: req.Stream,
		Online: req.Registered, Schemas: req.Schemas, Origin: req.Origin, At: h.ReceivedAt}
	for _, t := range req.Tracks {
		c.Tracks = append(c.Tracks, streams.Track{Kind: t.Kind, Codec: t.Codec, Width: t.Width, Height: t.Height, FPS: t.FPS,
			SampleRate: t.SampleRate, Channels: t.Channels})
	}
	return c
}

// Run writes queued hooks to the inbox in batches until ctx ends. After a
// batch's first hook it sleeps out the linger instead of taking the hooks
// one by one as they come: a hook queued meanwhile wakes no goroutine, so
// at a thousand hooks a second the decisions do not share their CPU with a
// thousand wake-ups of the writer. A batch already full is written at once.
func (s *Service) Run(ctx context.Context) {
	batch := make([]queued, 0, batchSize)
	linger := time.NewTimer(batchLinger)
	linger.Stop()
	defer linger.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-s.queue:
			batch = s.drain(append(batch[:0], q))
		}
		if len(batch) < batchSize {
			linger.Reset(batchLinger)
			select {
			case <-linger.C:
			case <-ctx.Done():
			}
			batch = s.drain(batch)
		}
		s.write(ctx, batch)
	}
}

// drain adds the hooks already queued to batch, up to batchSize.
func (s *Service) drain(batch []queued) []queued {
	for len(batch) < batchSize {
		select {
		case q := <-s.queue:
			batch = append(batch, q)
		default:
			return batch
		}
	}
	return batch
}

func (s *Service) write(ctx context.Context, batch []queued) {
	var ops []store.Op
	for _, q := range batch {
		_, op, err := s.Events.EngineHookOp(q.name, q.mediaServerID, q.raw)
		if err != nil {
			s.Log.Warn("engine hook not kept", zap.String("hook", q.name), zap.Error(err))
			continue
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.Store.Txn(wctx, store.TxnRequest{Then: ops}); err != nil && ctx.Err() == nil {
		s.Log.Warn("engine hooks not kept", zap.Int("hooks", len(batch)), zap.Error(err))
	}
}

// Dropped counts hooks that found the inbox queue full.
func (s *Service) Dropped() uint64 { return s.dropped.Load() }
