package httpapi

import (
	"context"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/rooms"
)

// The archive reads of meeting recordings (rtcEndpoints, continued).

func archiveTicket(ctx context.Context, query *string) string {
	if query != nil && *query != "" {
		return *query
	}
	return participantToken(ctx, true)
}

func (e *rtcEndpoints) ListRtcRecordings(ctx context.Context, req contract.ListRtcRecordingsRequestObject) (contract.ListRtcRecordingsResponseObject, error) {
	p := req.Params
	f := rooms.RecordingFilter{Search: orZero(p.Search), ParticipantID: uuidText(p.ParticipantId), DeviceSessionID: uuidText(p.DeviceSessionId),
		From: p.FromUtc, To: p.ToUtc, Page: 1, PageSize: 20}
	if p.RoomId != nil {
		f.RoomID = roomID(*p.RoomId)
	}
	if p.State != nil {
		f.State = string(*p.State)
	}
	if p.Page != nil {
		f.Page = int(*p.Page)
	}
	if p.PageSize != nil {
		f.PageSize = int(*p.PageSize)
	}
	var (
		list  []rooms.Recording
		total int64
		err   error
	)
	rctx := requestContext(ctx)
	if id := identity.From(rctx); id != nil {
		c := roomCaller(ctx)
		c.Super = id.Has("*")
		list, total, err = e.rooms.ListRecordings(rctx, c, f)
	} else {
		list, total, err = e.rooms.ListRecordingsWithTicket(rctx, archiveTicket(ctx, p.RtcArchiveToken), f)
	}
	if err != nil {
		return nil, err
	}
	out := contract.RtcRecordingList{Total: total, Page: int32(f.Page), PageSize: int32(f.PageSize), Items: []contract.RtcRecording{}}
	for i := range list {
		out.Items = append(out.Items, toRecording(&list[i]))
	}
	return contract.ListRtcRecordings200JSONResponse(out), nil
}

func uuidText[T interface{ String() string }](v *T) string {
	if v == nil {
		return ""
	}
	return (*v).String()
}

// trackFile relays a track's file from its engine.
type trackFile struct{ engineFile }

func (f trackFile) VisitGetRtcRecordingFileMediaResponse(w http.ResponseWriter) error {
	return f.relay(w)
}
func (f trackFile) VisitDownloadRtcRecordingFileResponse(w http.ResponseWriter) error {
	return f.relay(w)
}

func (e *rtcEndpoints) readTrackFile(ctx context.Context, room rooms.RoomID, ticket, recordingID, fileID, action string) (trackFile, error) {
	u, err := e.rooms.RecordingFileURL(requestContext(ctx), room, ticket, recordingID, fileID, action)
	if err != nil {
		return trackFile{}, err
	}
	f, err := readEngine(ctx, u, "recording_file_unavailable", "the recording file cannot be played")
	return trackFile{f}, err
}

func (e *rtcEndpoints) GetRtcRecordingFileMedia(ctx context.Context, req contract.GetRtcRecordingFileMediaRequestObject) (
	contract.GetRtcRecordingFileMediaResponseObject, error) {
	f, err := e.readTrackFile(ctx, roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId, req.FileId, rooms.ActionPlay)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *rtcEndpoints) DownloadRtcRecordingFile(ctx context.Context, req contract.DownloadRtcRecordingFileRequestObject) (
	contract.DownloadRtcRecordingFileResponseObject, error) {
	f, err := e.readTrackFile(ctx, roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId, req.FileId, rooms.ActionDownload)
	if err != nil {
		return nil, err
	}
	return f, nil
}
