package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/talk"
)

// talkEndpoints serves intercom sessions. A session lives on the node
// holding its device's SIP transport (its sender and the device's dialog
// are in that node's memory); the other nodes relay its operations there.
type talkEndpoints struct {
	talk *talk.Service
	// gb establishes GB28181 sessions (nil: no SIP server).
	gb    *gb28181.Service
	store store.Store
	// relay reaches the node holding a session; nil keeps everything local.
	relay *gbRelay
}

// talkOp is one talk operation, as the internal link carries it.
type talkOp struct {
	Op             string `json:"op"`
	SessionID      string `json:"sessionId,omitempty"`
	Protocol       string `json:"protocol,omitempty"`
	DeviceID       string `json:"deviceId,omitempty"`
	ChannelID      string `json:"channelId,omitempty"`
	PTT            bool   `json:"ptt,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
	Payload        []byte `json:"payload,omitempty"`
}

// run does op here when this node holds the session (or, for a create,
// the device), otherwise on the node that does.
func (e *talkEndpoints) run(ctx context.Context, op talkOp) (*talk.Session, error) {
	if e.relay != nil && e.store != nil {
		var holder string
		var err error
		if op.Op == "create" {
			if e.gb != nil {
				holder, err = e.gb.Holder(ctx, gb28181.DeviceID(op.DeviceID))
			}
		} else if _, lerr := e.service().Get(op.SessionID); errors.Is(lerr, talk.ErrNotFound) {
			var o *talk.Owner
			if o, err = talk.GetOwner(ctx, e.store, op.SessionID); err == nil && o.Ended && o.Session != nil {
				// Its node is gone: the record says how it ended.
				return o.EndedSession(op.Op == "audio" || op.Op == "ptt")
			}
			if err == nil && o.NodeID != e.gb.NodeID() {
				holder = o.NodeID
			}
		}
		if err != nil {
			return nil, err
		}
		if holder != "" {
			return e.relay.Talk(ctx, holder, op)
		}
	}
	return e.local(ctx, op)
}

// local does op on this node only: what a relayed operation runs.
func (e *talkEndpoints) local(ctx context.Context, op talkOp) (*talk.Session, error) {
	switch op.Op {
	case "create":
		if e.gb == nil || e.talk == nil {
			return nil, noSIP()
		}
		timeout := time.Duration(op.TimeoutSeconds) * time.Second
		est := func(ctx context.Context, open func(talk.Remote) (string, int, error)) (talk.Remote, error) {
			inv, err := e.gb.Broadcast(ctx, gb28181.DeviceID(op.DeviceID), op.ChannelID, timeout, func(inv gb28181.AudioInvite) (string, int, error) {
				return open(talk.Remote{Addr: inv.DeviceMedia, PayloadType: inv.PayloadType, SSRC: inv.SSRC, Ref: inv.CallID})
			})
			return talk.Remote{Addr: inv.DeviceMedia, PayloadType: inv.PayloadType, SSRC: inv.SSRC, Ref: inv.CallID}, err
		}
		s, err := e.talk.Create(ctx, op.Protocol, op.DeviceID, op.ChannelID, op.PTT, est)
		if err != nil {
			return nil, err
		}
		if e.store != nil {
			if err := talk.PutOwner(ctx, e.store, s, e.gb.NodeID()); err != nil {
				e.talk.ReleaseMedia(s.SessionID)
				return nil, err
			}
		}
		return s, nil
	case "get":
		return e.service().Get(op.SessionID)
	case "audio":
		return e.service().Write(op.SessionID, op.Payload)
	case "ptt":
		return e.service().SetPTT(op.SessionID, op.PTT)
	case "release":
		return e.service().ReleaseMedia(op.SessionID)
	}
	return nil, newError(400, "invalid_body", "unknown talk operation "+op.Op)
}

// CreateTalkSession answers POST /api/v2/talk/sessions.
func (e *talkEndpoints) CreateTalkSession(ctx context.Context, r contract.CreateTalkSessionRequestObject) (contract.CreateTalkSessionResponseObject, error) {
	if e.gb == nil || e.talk == nil {
		return nil, noSIP()
	}
	b := r.Body
	s, err := e.run(requestContext(ctx), talkOp{Op: "create", Protocol: string(b.Protocol), DeviceID: b.DeviceId, ChannelID: b.ChannelId,
		PTT: deref(b.Ptt, true), TimeoutSeconds: int(deref(b.TimeoutSeconds, 10))})
	if err != nil {
		return nil, err
	}
	return contract.CreateTalkSession200JSONResponse(talkOut(s)), nil
}

// GetTalkSession answers GET /api/v2/talk/sessions/{sessionId}.
func (e *talkEndpoints) GetTalkSession(ctx context.Context, r contract.GetTalkSessionRequestObject) (contract.GetTalkSessionResponseObject, error) {
	s, err := e.run(requestContext(ctx), talkOp{Op: "get", SessionID: r.SessionId})
	if err != nil {
		return nil, err
	}
	return contract.GetTalkSession200JSONResponse(talkOut(s)), nil
}

// WriteTalkAudio answers POST /api/v2/talk/sessions/{sessionId}/audio.
func (e *talkEndpoints) WriteTalkAudio(ctx context.Context, r contract.WriteTalkAudioRequestObject) (contract.WriteTalkAudioResponseObject, error) {
	s, err := e.run(requestContext(ctx), talkOp{Op: "audio", SessionID: r.SessionId, Payload: r.Body.Payload})
	if err != nil {
		return nil, err
	}
	return contract.WriteTalkAudio200JSONResponse(talkOut(s)), nil
}

// ReleaseTalkMedia answers DELETE /api/v2/talk/sessions/{sessionId}/media.
func (e *talkEndpoints) ReleaseTalkMedia(ctx context.Context, r contract.ReleaseTalkMediaRequestObject) (contract.ReleaseTalkMediaResponseObject, error) {
	s, err := e.run(requestContext(ctx), talkOp{Op: "release", SessionID: r.SessionId})
	if err != nil {
		return nil, err
	}
	return contract.ReleaseTalkMedia200JSONResponse(talkOut(s)), nil
}

// SetTalkPtt answers POST /api/v2/talk/sessions/{sessionId}/ptt.
func (e *talkEndpoints) SetTalkPtt(ctx context.Context, r contract.SetTalkPttRequestObject) (contract.SetTalkPttResponseObject, error) {
	s, err := e.run(requestContext(ctx), talkOp{Op: "ptt", SessionID: r.SessionId, PTT: r.Body.Enabled})
	if err != nil {
		return nil, err
	}
	return contract.SetTalkPtt200JSONResponse(talkOut(s)), nil
}

// service is the node's talk sessions; a node without any has none to find.
func (e *talkEndpoints) service() *talk.Service {
	if e.talk == nil {
		return &talk.Service{}
	}
	return e.talk
}

func talkOut(s *talk.Session) contract.TalkSession {
	out := contract.TalkSession{Id: s.SessionID, Protocol: s.Protocol, DeviceId: s.DeviceID, ChannelId: s.ChannelID, Codec: contract.TalkSessionCodec(s.Codec),
		MediaState: contract.TalkSessionMediaState(s.MediaState), Ptt: s.PTT, PacketsSent: s.PacketsSent, BytesSent: s.BytesSent,
		BufferedBytes: int32(s.Buffered), CreatedAt: s.CreatedAt, ReleasedAt: s.ReleasedAt}
	if s.ReleaseReason != "" {
		out.ReleaseReason = &s.ReleaseReason
	}
	return out
}
