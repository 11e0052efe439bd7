package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/rooms"
)

// The continuous recording of meeting rooms (rtcEndpoints, continued).

func toRecording(r *rooms.Recording) contract.RtcRecording {
	return contract.RtcRecording{RecordingId: mustUUID(r.RecordingID), RoomId: mustUUID(string(r.RoomID)), State: contract.RtcRecordingState(r.State),
		OriginAtUtc: r.OriginAt, StoppedAtUtc: r.StoppedAt, ParticipantCount: int32(len(r.Participants)), PublicationCount: int32(len(r.Publications))}
}

func toCurrent(r *rooms.Recording) contract.RtcCurrentRecording {
	if r == nil {
		return contract.RtcCurrentRecording{}
	}
	rec := toRecording(r)
	return contract.RtcCurrentRecording{Recording: &rec}
}

func (e *rtcEndpoints) SetRtcRecordingPolicy(ctx context.Context, req contract.SetRtcRecordingPolicyRequestObject) (contract.SetRtcRecordingPolicyResponseObject,
	error) {
	c := roomCaller(ctx)
	if id := identity.From(requestContext(ctx)); id != nil {
		c.Super = id.Has("*")
	}
	r, err := e.rooms.SetRecordingPolicy(requestContext(ctx), c, roomID(req.RoomId), req.Body.Enabled)
	if err != nil {
		return nil, err
	}
	return contract.SetRtcRecordingPolicy200JSONResponse(toRoom(r)), nil
}

func (e *rtcEndpoints) StartRtcRecording(ctx context.Context, req contract.StartRtcRecordingRequestObject) (contract.StartRtcRecordingResponseObject, error) {
	r, err := e.rooms.StartRecording(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId))
	if err != nil {
		return nil, err
	}
	return contract.StartRtcRecording200JSONResponse(toRecording(r)), nil
}

func (e *rtcEndpoints) GetRtcCurrentRecording(ctx context.Context, req contract.GetRtcCurrentRecordingRequestObject) (contract.GetRtcCurrentRecordingResponseObject,
	error) {
	r, err := e.rooms.CurrentRecording(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId))
	if err != nil {
		return nil, err
	}
	return contract.GetRtcCurrentRecording200JSONResponse(toCurrent(r)), nil
}

func (e *rtcEndpoints) StopRtcRecording(ctx context.Context, req contract.StopRtcRecordingRequestObject) (contract.StopRtcRecordingResponseObject, error) {
	r, err := e.rooms.StopRecording(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId), req.RecordingId)
	if err != nil {
		return nil, err
	}
	return contract.StopRtcRecording200JSONResponse(toRecording(r)), nil
}

func (e *rtcEndpoints) ListRtcRecordingRuns(ctx context.Context, req contract.ListRtcRecordingRunsRequestObject) (contract.ListRtcRecordingRunsResponseObject,
	error) {
	all, err := e.rooms.Recordings(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId))
	if err != nil {
		return nil, err
	}
	page, size := 1, 20
	if req.Params.Page != nil {
		page = int(*req.Params.Page)
	}
	if req.Params.PageSize != nil {
		size = int(*req.Params.PageSize)
	}
	out := contract.RtcRecordingList{Total: int64(len(all)), Page: int32(page), PageSize: int32(size), Items: []contract.RtcRecording{}}
	for i := (page - 1) * size; i < len(all) && i < page*size; i++ {
		out.Items = append(out.Items, toRecording(&all[i]))
	}
	return contract.ListRtcRecordingRuns200JSONResponse(out), nil
}

func (e *rtcEndpoints) StartRtcRecordingAsHost(ctx context.Context, req contract.StartRtcRecordingAsHostRequestObject) (
	contract.StartRtcRecordingAsHostResponseObject, error) {
	r, err := e.rooms.StartRecordingAsHost(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false))
	if err != nil {
		return nil, err
	}
	return contract.StartRtcRecordingAsHost200JSONResponse(toRecording(r)), nil
}

func (e *rtcEndpoints) GetRtcCurrentRecordingAsParticipant(ctx context.Context, req contract.GetRtcCurrentRecordingAsParticipantRequestObject) (
	contract.GetRtcCurrentRecordingAsParticipantResponseObject, error) {
	r, err := e.rooms.CurrentRecordingAsParticipant(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false))
	if err != nil {
		return nil, err
	}
	return contract.GetRtcCurrentRecordingAsParticipant200JSONResponse(toCurrent(r)), nil
}

func (e *rtcEndpoints) StopRtcRecordingAsHost(ctx context.Context, req contract.StopRtcRecordingAsHostRequestObject) (
	contract.StopRtcRecordingAsHostResponseObject, error) {
	r, err := e.rooms.StopRecordingAsHost(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false), req.RecordingId)
	if err != nil {
		return nil, err
	}
	return contract.StopRtcRecordingAsHost200JSONResponse(toRecording(r)), nil
}

func (e *rtcEndpoints) CreateRtcArchiveTicket(ctx context.Context, req contract.CreateRtcArchiveTicketRequestObject) (
	contract.CreateRtcArchiveTicketResponseObject, error) {
	c := roomCaller(ctx)
	id := identity.From(requestContext(ctx))
	has := func(string) bool { return false }
	if id != nil {
		c.Super, has = id.Has("*"), id.Has
	}
	var actions []string
	lifetime := 0
	if b := req.Body; b != nil {
		for _, a := range orZero(b.Actions) {
			actions = append(actions, string(a))
		}
		lifetime = int(orZero(b.LifetimeSeconds))
	}
	t, err := e.rooms.IssueArchiveTicket(requestContext(ctx), c, has, roomID(req.RoomId), actions, lifetime)
	if err != nil {
		return nil, err
	}
	out := contract.CreateRtcArchiveTicket200JSONResponse{Token: t.Token, RoomId: req.RoomId, ExpiresAtUtc: t.ExpiresAt}
	for _, a := range t.Actions {
		out.Actions = append(out.Actions, contract.RtcArchiveAction(a))
	}
	return out, nil
}

func (e *rtcEndpoints) GetRtcRecordingManifest(ctx context.Context, req contract.GetRtcRecordingManifestRequestObject) (
	contract.GetRtcRecordingManifestResponseObject, error) {
	ticket := participantToken(ctx, true)
	if req.Params.RtcArchiveToken != nil {
		ticket = *req.Params.RtcArchiveToken
	}
	m, err := e.rooms.RecordingManifest(requestContext(ctx), roomID(req.RoomId), ticket, req.RecordingId, orZero(req.Params.AfterSequence))
	if err != nil {
		return nil, err
	}
	out, err := toManifest(m)
	if err != nil {
		return nil, err
	}
	return contract.GetRtcRecordingManifest200JSONResponse(out), nil
}

func (e *rtcEndpoints) GetRtcSessionPlaybackManifest(ctx context.Context, req contract.GetRtcSessionPlaybackManifestRequestObject) (
	contract.GetRtcSessionPlaybackManifestResponseObject, error) {
	m, err := e.rooms.SessionManifest(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false))
	if err != nil {
		return nil, err
	}
	out, err := toManifest(m)
	if err != nil {
		return nil, err
	}
	return contract.GetRtcSessionPlaybackManifest200JSONResponse(out), nil
}

func toManifest(m *rooms.Manifest) (contract.RtcRecordingManifest, error) {
	out := contract.RtcRecordingManifest{RecordingId: mustUUID(m.Recording.RecordingID), State: contract.RtcRecordingState(m.Recording.State),
		OriginAtUtc: m.Recording.OriginAt, DurationMilliseconds: m.DurationMs, Tracks: []contract.RtcManifestTrack{},
		Composites: []contract.RtcComposite{}, Events: []map[string]any{}, NextSequence: m.NextSequence}
	for _, tr := range m.Tracks {
		ct := contract.RtcManifestTrack{ParticipantId: mustUUID(string(tr.ParticipantID)), DeviceSessionId: mustUUID(tr.DeviceSessionID),
			MediaKind: contract.RtcMediaKind(tr.MediaKind), Codec: tr.Codec, Files: []contract.RtcManifestFile{}}
		for _, f := range tr.Files {
			ct.Files = append(ct.Files, contract.RtcManifestFile{FileId: f.FileID, OffsetMilliseconds: f.OffsetMs, DurationMilliseconds: f.DurationMs})
		}
		out.Tracks = append(out.Tracks, ct)
	}
	for i := range m.Composites {
		out.Composites = append(out.Composites, toComposite(&m.Composites[i]))
	}
	exports := []contract.RtcFullExport{}
	for i := range m.Exports {
		exports = append(exports, toExport(&m.Exports[i]))
	}
	out.Exports = &exports
	atts, err := rooms.Attachments(m)
	if err != nil {
		return out, err
	}
	list := []contract.RtcRecordingAttachment{}
	for _, a := range atts {
		list = append(list, contract.RtcRecordingAttachment{AttachmentId: a.AttachmentID, Name: a.Name, ContentType: a.ContentType})
	}
	out.Attachments = &list
	return out, nil
}
