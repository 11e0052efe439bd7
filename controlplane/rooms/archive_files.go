package rooms

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// RecordingIndex serves GET /rtc/recordings: a business caller's
// recordings (by the owner of their room) or an archive ticket's room,
// filtered by state, start time, participant and device session.
var RecordingIndex = query.Index{Name: "rtc_recordings", Prefix: recordingsPrefix, Columns: []query.Column{
	{Name: "owner_token_id", Type: query.Text, Path: "$.ownerTokenId"},
	{Name: "room_id", Type: query.Text, Path: "$.roomId"},
	{Name: "origin_ms", Type: query.Integer, Path: "$.originMs"},
	{Name: "recording_id", Type: query.Text, Path: "$.recordingId", NoIndex: true},
	{Name: "state", Type: query.Text, Path: "$.state", NoIndex: true},
	{Name: "room_name", Type: query.Text, Path: "$.roomName", NoIndex: true},
	// The arrays are kept as their JSON text: an id (a UUID) is found in
	// it by a substring search.
	{Name: "participants", Type: query.Text, Path: "$.participants", NoIndex: true},
	{Name: "publications", Type: query.Text, Path: "$.publications", NoIndex: true},
	// composites_planned is NULL until a Stopped recording's composites
	// are planned: the composite worker finds the ones a failed plan left.
	{Name: "composites_planned", Type: query.Integer, Path: "$.compositesPlanned"},
}}

// ErrRecordingNotReady is a track read while its recording still stops
// (its files are not all sealed yet) (409).
var ErrRecordingNotReady = fault.New(fault.Conflict, "recording_not_ready", "rooms: the recording is still stopping")

// RecordingFilter is GET /rtc/recordings' query.
type RecordingFilter struct {
	RoomID          RoomID
	Search          string
	State           string
	ParticipantID   string
	DeviceSessionID string
	// From and To bound the recording's start, closed-open.
	From, To       *time.Time
	Page, PageSize int
}

// ListRecordings pages the recordings of the rooms the caller owns (every
// room's for a super administrator), newest first.
func (s *Service) ListRecordings(ctx context.Context, c Caller, f RecordingFilter) ([]Recording, int64, error) {
	var where []query.Cond
	if !c.Super {
		where = append(where, query.Eq("owner_token_id", c.TokenID))
	}
	return s.listRecordings(ctx, where, f)
}

// ListRecordingsWithTicket pages the recordings of an archive ticket's
// room (the ticket needs view); a roomId filter naming another room finds
// nothing.
func (s *Service) ListRecordingsWithTicket(ctx context.Context, ticket string, f RecordingFilter) ([]Recording, int64, error) {
	t, ok := s.parseArchiveTicket(ticket)
	if !ok {
		return nil, 0, ErrArchiveTicketInvalid
	}
	if _, err := s.checkArchive(ctx, t.room, ticket, ActionView); err != nil {
		return nil, 0, err
	}
	return s.listRecordings(ctx, []query.Cond{query.Eq("room_id", string(t.room))}, f)
}

func (s *Service) listRecordings(ctx context.Context, where []query.Cond, f RecordingFilter) ([]Recording, int64, error) {
	if f.PageSize < 1 || f.PageSize > 100 || f.Page < 1 {
		return nil, 0, fmt.Errorf("%w: page is from 1, pageSize 1-100", ErrInvalid)
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return nil, 0, fmt.Errorf("%w: fromUtc must precede toUtc", ErrInvalid)
	}
	if f.RoomID != "" {
		where = append(where, query.Eq("room_id", string(f.RoomID)))
	}
	switch f.State {
	case "":
	case RecordingStarting, RecordingRecording, RecordingStopping, RecordingStopped:
		where = append(where, query.Eq("state", f.State))
	default:
		return nil, 0, fmt.Errorf("%w: state is Starting, Recording, Stopping or Stopped", ErrInvalid)
	}
	if f.From != nil {
		where = append(where, query.Ge("origin_ms", f.From.UnixMilli()))
	}
	if f.To != nil {
		where = append(where, query.Lt("origin_ms", f.To.UnixMilli()))
	}
	if f.Search != "" {
		where = append(where, query.AnyOf(query.Contains("room_name", f.Search), query.Contains("recording_id", f.Search)))
	}
	if f.ParticipantID != "" {
		where = append(where, query.Contains("participants", `"`+f.ParticipantID+`"`))
	}
	if f.DeviceSessionID != "" {
		where = append(where, query.Contains("publications", `"`+f.DeviceSessionID+`"`))
	}
	return query.Page(ctx, s.Reader, query.Query{Index: RecordingIndex.Name, Where: where,
		Order: []query.Order{query.Desc("origin_ms"), query.Desc(query.Key)}}, f.Page, f.PageSize, query.JSON[Recording])
}

// RecordingFileURL is where the file of a recording's track, or one of
// its Available composites, is read from, for an archive ticket holding action (play for the media,
// download for the attachment). The file must be one of the recording's
// tracks; while the recording stops, its files are not all sealed and
// none is handed out.
func (s *Service) RecordingFileURL(ctx context.Context, id RoomID, ticket, recordingID, fileID, action string) (string, error) {
	r, err := s.checkArchive(ctx, id, ticket, action)
	if err != nil {
		return "", err
	}
	rec, err := s.recording(ctx, id, recordingID)
	if err != nil {
		return "", err
	}
	if rec.State == RecordingStopping || rec.State == RecordingStarting {
		return "", ErrRecordingNotReady
	}
	if u, found, err := s.compositeURL(ctx, r, rec, fileID, action); found || err != nil {
		return u, err
	}
	if s.Archive == nil {
		return "", ErrRecordingNotFound
	}
	files, err := s.recordingFiles(ctx, r, rec)
	if err != nil {
		return "", err
	}
	for _, fs := range files {
		if slices.ContainsFunc(fs, func(f TrackFile) bool { return f.FileID == fileID }) {
			return s.Archive.FileURL(ctx, fileID, action)
		}
	}
	return "", fmt.Errorf("%w: the recording has no file %q", ErrRecordingNotFound, fileID)
}

// recordingFiles are the files recorded of each publication of a
// recording, by publication. A file's media may start a moment before
// the origin (it opened at the stream's keyframe), so the window reaches
// a minute either side.
func (s *Service) recordingFiles(ctx context.Context, r *Room, rec *Recording) (map[string][]TrackFile, error) {
	out := map[string][]TrackFile{}
	if s.Archive == nil {
		return out, nil
	}
	end := s.now()
	if rec.StoppedAt != nil {
		end = *rec.StoppedAt
	}
	for _, pubID := range rec.Publications {
		files, err := s.Archive.StreamFiles(ctx, r.MediaServerID, streamName(r.RoomID, pubID), rec.OriginAt.Add(-time.Minute), end.Add(time.Minute))
		if err != nil {
			return nil, err
		}
		out[pubID] = files
	}
	return out, nil
}
