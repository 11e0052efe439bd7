package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/streams"
)

// GB28181 record queries and history playback.

// playbackInvitePath is where a record entry's playback action points.
const playbackInvitePath = "/api/v2/gb28181/playback/invite"

// noSIP answers operations that need the node's SIP server when it runs none.
func noSIP() error {
	return fmt.Errorf("%w: this control node runs no GB28181 SIP server (set --gb28181-password-file)", gb28181.ErrDeviceOffline)
}

// CreateGb28181RecordQuery answers POST /api/v2/gb28181/records/query.
func (e *gb28181Endpoints) CreateGb28181RecordQuery(ctx context.Context,
	r contract.CreateGb28181RecordQueryRequestObject) (contract.CreateGb28181RecordQueryResponseObject, error) {
	if e.gb == nil {
		return nil, noSIP()
	}
	b := r.Body
	q, err := e.gb.StartRecordQuery(requestContext(ctx), gb28181.DeviceID(b.DeviceId), b.ChannelId, b.StartTime, b.EndTime,
		time.Duration(deref(b.TimeoutSeconds, 10))*time.Second)
	if err != nil {
		return nil, err
	}
	return contract.CreateGb28181RecordQuery200JSONResponse(recordQueryOut(q)), nil
}

// GetGb28181RecordQuery answers GET /api/v2/gb28181/records/query/{taskId}.
func (e *gb28181Endpoints) GetGb28181RecordQuery(ctx context.Context,
	r contract.GetGb28181RecordQueryRequestObject) (contract.GetGb28181RecordQueryResponseObject, error) {
	q, err := gb28181.GetRecordQuery(requestContext(ctx), e.store, r.TaskId)
	if err != nil {
		return nil, err
	}
	return contract.GetGb28181RecordQuery200JSONResponse(recordQueryOut(q)), nil
}

func recordQueryOut(q *gb28181.RecordQuery) contract.Gb28181RecordQuery {
	out := contract.Gb28181RecordQuery{TaskId: q.TaskID, DeviceId: string(q.DeviceID), ChannelId: q.ChannelID, StartTime: q.StartTime, EndTime: q.EndTime,
		State: contract.Gb28181RecordQueryState(q.State), SumNum: int32(q.SumNum), CreatedAt: q.CreatedAt, FinishedAt: q.FinishedAt,
		Records: make([]contract.Gb28181Record, 0, len(q.Records))}
	for _, rec := range q.Records {
		o := contract.Gb28181Record{RecordId: rec.RecordID, StartTime: rec.StartTime, EndTime: rec.EndTime, Secrecy: int32(rec.Secrecy),
			Playback: contract.Gb28181PlaybackAction{Method: "POST", Endpoint: playbackInvitePath, Request: contract.Gb28181PlaybackInviteRequest{
				DeviceId: string(q.DeviceID), ChannelId: q.ChannelID, StartTime: rec.StartTime, EndTime: rec.EndTime}}}
		if rec.Name != "" {
			o.Name = &rec.Name
		}
		if rec.Type != "" {
			o.Type = &rec.Type
		}
		if rec.FileSize > 0 {
			o.FileSize = &rec.FileSize
		}
		out.Records = append(out.Records, o)
	}
	return out
}

// InviteGb28181Playback answers POST /api/v2/gb28181/playback/invite.
func (e *gb28181Endpoints) InviteGb28181Playback(ctx context.Context,
	r contract.InviteGb28181PlaybackRequestObject) (contract.InviteGb28181PlaybackResponseObject, error) {
	if e.playback == nil {
		return nil, noSIP()
	}
	b := r.Body
	s, err := e.playback.Start(requestContext(ctx), streams.PlaybackRequest{DeviceID: b.DeviceId, ChannelID: b.ChannelId, Start: b.StartTime, End: b.EndTime,
		MediaServerID: deref(b.MediaServerId, ""), TCP: deref(b.RtpWithTcp, false), TCPActive: deref(b.TcpActive, false),
		Timeout: time.Duration(deref(b.TimeoutSeconds, 10)) * time.Second})
	if err != nil {
		return nil, err
	}
	return contract.InviteGb28181Playback200JSONResponse{Session: sessionOut(s)}, nil
}

// GetGb28181PlaybackSession answers GET /api/v2/gb28181/playback/sessions/{sessionId}.
func (e *gb28181Endpoints) GetGb28181PlaybackSession(ctx context.Context,
	r contract.GetGb28181PlaybackSessionRequestObject) (contract.GetGb28181PlaybackSessionResponseObject, error) {
	if e.playback == nil {
		return nil, noSIP()
	}
	s, err := e.playback.Get(requestContext(ctx), r.SessionId)
	if err != nil {
		return nil, err
	}
	return contract.GetGb28181PlaybackSession200JSONResponse(sessionOut(s)), nil
}

// StopGb28181PlaybackSession answers POST /api/v2/gb28181/playback/sessions/{sessionId}/stop.
func (e *gb28181Endpoints) StopGb28181PlaybackSession(ctx context.Context,
	r contract.StopGb28181PlaybackSessionRequestObject) (contract.StopGb28181PlaybackSessionResponseObject, error) {
	if e.playback == nil {
		return nil, noSIP()
	}
	if err := e.playback.Stop(requestContext(ctx), r.SessionId, "stopped through the API"); err != nil {
		return nil, err
	}
	s, err := e.playback.Get(requestContext(ctx), r.SessionId)
	if err != nil {
		return nil, err
	}
	return contract.StopGb28181PlaybackSession200JSONResponse(sessionOut(s)), nil
}

// CreateThirdPartyGb28181PlaybackLease answers POST
// /api/v2/third-party/gb28181/playback-sessions/{sessionId}/playback-lease.
func (e *gb28181Endpoints) CreateThirdPartyGb28181PlaybackLease(ctx context.Context,
	r contract.CreateThirdPartyGb28181PlaybackLeaseRequestObject) (contract.CreateThirdPartyGb28181PlaybackLeaseResponseObject, error) {
	if e.playback == nil {
		return nil, noSIP()
	}
	s, err := e.playback.Get(requestContext(ctx), r.SessionId)
	if err != nil {
		return nil, err
	}
	if s.State != streams.PlaybackPlaying {
		return nil, fmt.Errorf("%w: %s (%s)", streams.ErrPlaybackEnded, s.SessionID, s.EndReason)
	}
	b := r.Body
	l, srcs, err := e.leases.CreateSessionLease(requestContext(ctx), caller(ctx), playback.KindGBPlayback, s.SessionID,
		playback.StreamLocator{MediaServerID: s.MediaServerID, Vhost: s.Vhost, App: s.App, Stream: s.Stream},
		playback.LeaseRequest{Protocols: protocolNames(b.Protocols), LeaseSeconds: intPtr(b.LeaseSeconds), AbsoluteLifetimeSeconds: intPtr(b.AbsoluteLifetimeSeconds)})
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyGb28181PlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func sessionOut(s *streams.PlaybackSession) contract.Gb28181PlaybackSession {
	out := contract.Gb28181PlaybackSession{Id: s.SessionID, DeviceId: s.DeviceID, ChannelId: s.ChannelID, StartTime: s.StartTime, EndTime: s.EndTime,
		MediaServerId: s.MediaServerID, Vhost: s.Vhost, App: s.App, StreamId: s.Stream, State: contract.Gb28181PlaybackSessionState(s.State),
		CreatedAt: s.CreatedAt, EndedAt: s.EndedAt}
	if s.EndReason != "" {
		out.EndReason = &s.EndReason
	}
	return out
}
