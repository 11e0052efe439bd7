package rooms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// Full exports: a time range of a stopped recording, cut from each
// recorded publication's files into one MP4 per publication (its audio
// and video in their own encodings, no transcoding) on the room's media
// server. The cutting is the recording service's cut/merge, whose
// leader-run worker retries a media server that cannot be asked; an
// export's state follows its parts': Pending, Running, Failed (a part
// failed; retry cuts the failed parts again) or Available.

// Export states (contract B).
const (
	ExportPending   = "Pending"
	ExportRunning   = "Running"
	ExportFailed    = "Failed"
	ExportAvailable = "Available"
)

// Cut states an Exporter answers.
const (
	CutPending   = "Pending"
	CutRunning   = "Running"
	CutSucceeded = "Succeeded"
	CutFailed    = "Failed"
)

const exportsPrefix = "/rtc/exports/"

func exportKey(room RoomID, recordingID, id string) string {
	return exportsPrefix + string(room) + "/" + recordingID + "/" + id
}

// Errors of exports.
var (
	// ErrExportNotFound is an unknown export of the recording (404).
	ErrExportNotFound = fault.New(fault.NotFound, "not_found", "rooms: no such export")
	// ErrExportNotAvailable is a read of an export that is not Available,
	// or a retry of one that has not Failed (409).
	ErrExportNotAvailable = fault.New(fault.Conflict, "export_not_available", "rooms: the export is not available")
	// ErrNoMediaInRange is an export range in which nothing was recorded
	// (409).
	ErrNoMediaInRange = fault.New(fault.Conflict, "export_no_media", "rooms: nothing was recorded in the range")
)

// ErrNoCutMedia is what an Exporter answers for a stream with no
// recorded media in the range (the export skips that stream; when no
// stream has any, the export answers ErrNoMediaInRange).
var ErrNoCutMedia = fault.New(fault.Conflict, "export_no_media", "rooms: no recorded media in the range")

// Exporter cuts a time range of a room stream's recorded files into one
// file on its media server, and answers the cut's state and where its
// output is read from for an action (play or download).
type Exporter interface {
	Cut(ctx context.Context, mediaServerID, stream string, from, to time.Time) (cutID string, err error)
	CutState(ctx context.Context, cutID string) (string, error)
	CutURL(ctx context.Context, cutID, action string) (string, error)
}

// ExportPart is one publication's file of an export.
type ExportPart struct {
	PublicationID string        `json:"publicationId"`
	ParticipantID ParticipantID `json:"participantId"`
	CutID         string        `json:"cutId"`
	// State is the part's cut state as last read.
	State string `json:"state,omitempty"`
}

// Export is one full export of a recording.
type Export struct {
	ExportID    string       `json:"exportId"`
	RoomID      RoomID       `json:"roomId"`
	RecordingID string       `json:"recordingId"`
	StartMs     int64        `json:"startMilliseconds"`
	EndMs       int64        `json:"endMilliseconds"`
	Parts       []ExportPart `json:"parts"`
	Attempts    int          `json:"attempts"`
	CreatedAt   time.Time    `json:"createdAtUtc"`
	// State is derived from the parts at every read.
	State string `json:"-"`
}

// CreateExport starts a full export of the range [startMs, endMs) of a
// stopped recording of a room the caller owns.
func (s *Service) CreateExport(ctx context.Context, c Caller, id RoomID, recordingID string, startMs, endMs int64) (*Export, error) {
	r, err := s.Room(ctx, c, id)
	if err != nil {
		return nil, err
	}
	rec, err := s.recording(ctx, id, recordingID)
	if err != nil {
		return nil, err
	}
	if rec.State != RecordingStopped || rec.StoppedAt == nil {
		return nil, fmt.Errorf("%w: a recording is exported once Stopped", ErrRecordingNotReady)
	}
	if dur := rec.StoppedAt.Sub(rec.OriginAt).Milliseconds(); startMs < 0 || startMs >= endMs || endMs > dur {
		return nil, fmt.Errorf("%w: the range must lie within 0-%d ms with start before end", ErrInvalid, dur)
	}
	if s.Exporter == nil {
		return nil, ErrMediaUnavailable
	}
	eid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	e := &Export{ExportID: eid.String(), RoomID: id, RecordingID: recordingID, StartMs: startMs, EndMs: endMs, Parts: []ExportPart{}, Attempts: 1,
		CreatedAt: s.now()}
	for _, pubID := range rec.Publications {
		pub, _, err := s.publication(ctx, id, pubID)
		if err != nil {
			return nil, err
		}
		part := ExportPart{PublicationID: pubID, ParticipantID: pub.ParticipantID}
		if err := s.cutPart(ctx, r, rec, e, &part); errors.Is(err, ErrNoCutMedia) {
			continue // this publication recorded nothing in the range
		} else if err != nil {
			return nil, err
		}
		e.Parts = append(e.Parts, part)
	}
	if len(e.Parts) == 0 {
		return nil, ErrNoMediaInRange
	}
	op, err := store.PutRecord(exportKey(id, recordingID, e.ExportID), e)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		return nil, err
	}
	return s.exportState(ctx, e)
}

func (s *Service) cutPart(ctx context.Context, r *Room, rec *Recording, e *Export, part *ExportPart) error {
	from := rec.OriginAt.Add(time.Duration(e.StartMs) * time.Millisecond)
	to := rec.OriginAt.Add(time.Duration(e.EndMs) * time.Millisecond)
	cut, err := s.Exporter.Cut(ctx, r.MediaServerID, streamName(r.RoomID, part.PublicationID), from, to)
	if err != nil {
		return err
	}
	part.CutID, part.State = cut, CutPending
	return nil
}

// exportState reads each part's cut and derives the export's state.
func (s *Service) exportState(ctx context.Context, e *Export) (*Export, error) {
	failed, done := false, 0
	running := false
	for i := range e.Parts {
		st, err := s.Exporter.CutState(ctx, e.Parts[i].CutID)
		if err != nil {
			return nil, err
		}
		e.Parts[i].State = st
		switch st {
		case CutFailed:
			failed = true
		case CutSucceeded:
			done++
		case CutRunning:
			running = true
		}
	}
	switch {
	case failed:
		e.State = ExportFailed
	case done == len(e.Parts):
		e.State = ExportAvailable
	case running || done > 0:
		e.State = ExportRunning
	default:
		e.State = ExportPending
	}
	return e, nil
}

func (s *Service) export(ctx context.Context, id RoomID, recordingID, exportID string) (*Export, *store.KeyValue, error) {
	if _, err := uuid.Parse(exportID); err != nil {
		return nil, nil, ErrExportNotFound
	}
	e, kv, err := store.GetRecord[Export](ctx, s.Store, exportKey(id, recordingID, exportID), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrExportNotFound
	}
	if s.Exporter == nil {
		return nil, nil, ErrMediaUnavailable
	}
	out, err := s.exportState(ctx, &e)
	return out, kv, err
}

// Exports lists a recording's exports, oldest first, to an archive ticket
// with view.
func (s *Service) Exports(ctx context.Context, id RoomID, ticket, recordingID string) ([]Export, error) {
	if _, err := s.checkArchive(ctx, id, ticket, ActionView); err != nil {
		return nil, err
	}
	if _, err := s.recording(ctx, id, recordingID); err != nil {
		return nil, err
	}
	return s.recordingExports(ctx, id, recordingID)
}

// recordingExports are a recording's exports with their states.
func (s *Service) recordingExports(ctx context.Context, id RoomID, recordingID string) ([]Export, error) {
	all, err := store.Records[Export](ctx, s.Store, exportKey(id, recordingID, ""), store.Local)
	if err != nil {
		return nil, err
	}
	if len(all) > 0 && s.Exporter == nil {
		return nil, ErrMediaUnavailable
	}
	for i := range all {
		if _, err := s.exportState(ctx, &all[i]); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// ExportFile is where one part of an Available export is read from.
type ExportFile struct {
	Part ExportPart
	URL  string
}

// ExportFiles answers an Available export's parts and where each is read
// from, to an archive ticket holding action (play or download).
func (s *Service) ExportFiles(ctx context.Context, id RoomID, ticket, recordingID, exportID, action string) (*Export, []ExportFile, error) {
	if _, err := s.checkArchive(ctx, id, ticket, action); err != nil {
		return nil, nil, err
	}
	e, _, err := s.export(ctx, id, recordingID, exportID)
	if err != nil {
		return nil, nil, err
	}
	if e.State != ExportAvailable {
		return nil, nil, fmt.Errorf("%w: it is %s", ErrExportNotAvailable, e.State)
	}
	out := make([]ExportFile, 0, len(e.Parts))
	for _, p := range e.Parts {
		u, err := s.Exporter.CutURL(ctx, p.CutID, action)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ExportFile{Part: p, URL: u})
	}
	return e, out, nil
}

// RetryExport cuts a Failed export's failed parts again (the recording's
// original files must still exist), for the room's owner.
func (s *Service) RetryExport(ctx context.Context, c Caller, id RoomID, recordingID, exportID string) (*Export, error) {
	r, err := s.Room(ctx, c, id)
	if err != nil {
		return nil, err
	}
	rec, err := s.recording(ctx, id, recordingID)
	if err != nil {
		return nil, err
	}
	e, kv, err := s.export(ctx, id, recordingID, exportID)
	if err != nil {
		return nil, err
	}
	if e.State != ExportFailed {
		return nil, fmt.Errorf("%w: only a Failed export is retried; it is %s", ErrExportNotAvailable, e.State)
	}
	for i := range e.Parts {
		if e.Parts[i].State != CutFailed {
			continue
		}
		if err := s.cutPart(ctx, r, rec, e, &e.Parts[i]); err != nil {
			return nil, err
		}
	}
	e.Attempts++
	op, err := store.PutRecord(kv.Key, e)
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{op}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: export %s", store.ErrContended, exportID)
	}
	return s.exportState(ctx, e)
}
