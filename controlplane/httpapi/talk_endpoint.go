package httpapi

import (
	"context"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/talk"
)

// talkEndpoints serves intercom sessions.
type talkEndpoints struct {
	talk *talk.Service
	// gb establishes GB28181 sessions (nil: no SIP server).
	gb *gb28181.Service
}

// CreateTalkSession answers POST /api/v2/talk/sessions.
func (e *talkEndpoints) CreateTalkSession(ctx context.Context, r contract.CreateTalkSessionRequestObject) (contract.CreateTalkSessionResponseObject, error) {
	if e.gb == nil || e.talk == nil {
		return nil, noSIP()
	}
	b := r.Body
	timeout := time.Duration(deref(b.TimeoutSeconds, 10)) * time.Second
	est := func(ctx context.Context, open func(talk.Remote) (string, int, error)) (talk.Remote, error) {
		inv, err := e.gb.Broadcast(ctx, gb28181.DeviceID(b.DeviceId), b.ChannelId, timeout, func(inv gb28181.AudioInvite) (string, int, error) {
			return open(talk.Remote{Addr: inv.DeviceMedia, PayloadType: inv.PayloadType, SSRC: inv.SSRC, Ref: inv.CallID})
		})
		return talk.Remote{Addr: inv.DeviceMedia, PayloadType: inv.PayloadType, SSRC: inv.SSRC, Ref: inv.CallID}, err
	}
	s, err := e.talk.Create(requestContext(ctx), string(b.Protocol), b.DeviceId, b.ChannelId, deref(b.Ptt, true), est)
	if err != nil {
		return nil, err
	}
	return contract.CreateTalkSession200JSONResponse(talkOut(s)), nil
}

// GetTalkSession answers GET /api/v2/talk/sessions/{sessionId}.
func (e *talkEndpoints) GetTalkSession(ctx context.Context, r contract.GetTalkSessionRequestObject) (contract.GetTalkSessionResponseObject, error) {
	s, err := e.service().Get(r.SessionId)
	if err != nil {
		return nil, err
	}
	return contract.GetTalkSession200JSONResponse(talkOut(s)), nil
}

// WriteTalkAudio answers POST /api/v2/talk/sessions/{sessionId}/audio.
func (e *talkEndpoints) WriteTalkAudio(ctx context.Context, r contract.WriteTalkAudioRequestObject) (contract.WriteTalkAudioResponseObject, error) {
	s, err := e.service().Write(r.SessionId, r.Body.Payload)
	if err != nil {
		return nil, err
	}
	return contract.WriteTalkAudio200JSONResponse(talkOut(s)), nil
}

// ReleaseTalkMedia answers DELETE /api/v2/talk/sessions/{sessionId}/media.
func (e *talkEndpoints) ReleaseTalkMedia(ctx context.Context, r contract.ReleaseTalkMediaRequestObject) (contract.ReleaseTalkMediaResponseObject, error) {
	s, err := e.service().ReleaseMedia(r.SessionId)
	if err != nil {
		return nil, err
	}
	return contract.ReleaseTalkMedia200JSONResponse(talkOut(s)), nil
}

// SetTalkPtt answers POST /api/v2/talk/sessions/{sessionId}/ptt.
func (e *talkEndpoints) SetTalkPtt(ctx context.Context, r contract.SetTalkPttRequestObject) (contract.SetTalkPttResponseObject, error) {
	s, err := e.service().SetPTT(r.SessionId, r.Body.Enabled)
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
	return contract.TalkSession{Id: s.SessionID, Protocol: s.Protocol, DeviceId: s.DeviceID, ChannelId: s.ChannelID, Codec: contract.TalkSessionCodec(s.Codec),
		MediaState: contract.TalkSessionMediaState(s.MediaState), Ptt: s.PTT, PacketsSent: s.PacketsSent, BytesSent: s.BytesSent,
		BufferedBytes: int32(s.Buffered), CreatedAt: s.CreatedAt, ReleasedAt: s.ReleasedAt}
}
