package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// Continuous recording states (contract B): a start answers Starting or
// Recording, a stop Stopping, and Stopped once every track is sealed.
const (
	RecordingStarting  = "Starting"
	RecordingRecording = "Recording"
	RecordingStopping  = "Stopping"
	RecordingStopped   = "Stopped"
)

const recordingsPrefix = "/rtc/recordings/"

func recordingKey(room RoomID, id string) string { return recordingsPrefix + string(room) + "/" + id }

// Errors of room recording.
var (
	// ErrRecordingNotAllowed is a start in a room whose recording policy
	// does not allow recording (409).
	ErrRecordingNotAllowed = fault.New(fault.Conflict, "recording_not_allowed", "rooms: the room's recording policy does not allow recording")
	// ErrRecordingNotFound is an unknown recording of the room (404).
	ErrRecordingNotFound = fault.New(fault.NotFound, "not_found", "rooms: no such recording")
)

// Recorder records room streams on their media server: each publication
// is one stream whose audio and video the engine copies as they arrive,
// in their own encoding, into files stamped with wall-clock time.
type Recorder interface {
	StartStream(ctx context.Context, mediaServerID, stream string) error
	// StopStream stops recording a stream; sealed is false while the
	// media server has not confirmed that its open file is closed.
	StopStream(ctx context.Context, mediaServerID, stream string) (sealed bool, err error)
}

// Recording is one continuous recording of a room.
type Recording struct {
	RecordingID string `json:"recordingId"`
	RoomID      RoomID `json:"roomId"`
	State       string `json:"state"`
	// OriginAt is the time origin every track's offsets count from.
	OriginAt  time.Time  `json:"originAtUtc"`
	StoppedAt *time.Time `json:"stoppedAtUtc,omitempty"`
	// Publications are the publications recorded (each its own stream).
	Publications []string `json:"publications"`
	// Participants counts the distinct participants recorded.
	Participants []ParticipantID `json:"participants"`
	StartedBy    string          `json:"startedBy"`
	LastError    string          `json:"lastError,omitempty"`
	// OwnerTokenID and RoomName are the room's, kept here so the
	// recording listing filters by owner and searches by name through the
	// index alone; OriginMs is OriginAt in Unix milliseconds, the
	// listing's time filter.
	OwnerTokenID string `json:"ownerTokenId,omitempty"`
	RoomName     string `json:"roomName,omitempty"`
	OriginMs     int64  `json:"originMs,omitempty"`
	// TrackRetries counts the tracks the sweep started again after their
	// recorder failed.
	TrackRetries int `json:"trackRetries,omitempty"`
	// CompositesPlanned is set, with the composites, once it Stopped.
	CompositesPlanned bool `json:"compositesPlanned,omitempty"`
}

// Active reports whether the recording still runs (a second start
// answers it).
func (r *Recording) Active() bool { return r.State != RecordingStopped }

// SetRecordingPolicy allows or forbids recording in a room the caller
// owns (a super administrator may set any room's). Allowing does not
// start a recording.
func (s *Service) SetRecordingPolicy(ctx context.Context, c Caller, id RoomID, enabled bool) (*Room, error) {
	return s.changeRoom(ctx, id, func(r *Room) (bool, error) {
		if r.OwnerTokenID != c.TokenID && !c.Super {
			return false, ErrNotFound
		}
		r.RecordingEnabled = enabled
		return true, nil
	})
}

// StartRecording starts the room's continuous recording for a caller
// that owns the room; StartRecordingAsHost for the room's current host.
func (s *Service) StartRecording(ctx context.Context, c Caller, id RoomID) (*Recording, error) {
	if _, err := s.Room(ctx, c, id); err != nil {
		return nil, err
	}
	return s.startRecording(ctx, id, "token:"+c.TokenID)
}

// StartRecordingAsHost starts the recording for the room's current host
// (a participant token whose role is host); anyone else is refused.
func (s *Service) StartRecordingAsHost(ctx context.Context, id RoomID, token string) (*Recording, error) {
	p, err := s.host(ctx, id, token)
	if err != nil {
		return nil, err
	}
	return s.startRecording(ctx, id, "participant:"+string(p.ParticipantID))
}

func (s *Service) host(ctx context.Context, id RoomID, token string) (*Participant, error) {
	p, _, err := s.admitted(ctx, id, token)
	if err != nil {
		return nil, err
	}
	if p.Role != RoleHost {
		return nil, fmt.Errorf("%w: only the room's current host controls its recording", ErrForbidden)
	}
	return p, nil
}

// startRecording answers the running recording, or creates one (the
// room's currentRecordingId compared in the same Txn, so two concurrent
// starts make one) and starts a recorder for every Active publication.
func (s *Service) startRecording(ctx context.Context, id RoomID, by string) (*Recording, error) {
	var rec *Recording
	for attempt := 0; rec == nil; attempt++ {
		if attempt == 5 {
			return nil, fmt.Errorf("%w: room %s", store.ErrContended, id)
		}
		r, kv, err := s.room(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.CurrentRecordingID != "" {
			return s.recording(ctx, id, r.CurrentRecordingID)
		}
		if r.Status != RoomOpen {
			return nil, ErrRoomClosed
		}
		if !r.RecordingEnabled {
			return nil, ErrRecordingNotAllowed
		}
		rid, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		origin := s.now()
		next := &Recording{RecordingID: rid.String(), RoomID: id, State: RecordingStarting, OriginAt: origin, StartedBy: by,
			Publications: []string{}, Participants: []ParticipantID{}, OwnerTokenID: r.OwnerTokenID, RoomName: r.Name, OriginMs: origin.UnixMilli()}
		r.CurrentRecordingID = next.RecordingID
		rval, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Put(kv.Key, rval), store.Put(recordingKey(id, next.RecordingID), val)}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			rec = next
			break
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	kvs, err := s.roomPublications(ctx, id)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, kv := range kvs {
		pub, err := store.Decode[Publication](kv)
		if err != nil {
			return nil, err
		}
		if pub.State == PublicationActive {
			errs = append(errs, s.recordPublication(ctx, &pub))
		}
	}
	if err := errors.Join(errs...); err != nil {
		// A start that failed does not hold the room: what did start is
		// stopped again, so a retry starts a new recording.
		_, ferr := s.recordingFailed(ctx, id, rec.RecordingID, err)
		if _, serr := s.stopRecording(ctx, id, rec.RecordingID); serr != nil {
			return nil, errors.Join(ferr, serr)
		}
		return nil, ferr
	}
	return s.updateRecording(ctx, id, rec.RecordingID, func(r *Recording) bool {
		if r.State != RecordingStarting {
			return false
		}
		r.State = RecordingRecording
		return true
	})
}

// recordPublication starts recording an Active publication's stream when
// its room has a running recording, and notes it in the recording.
func (s *Service) recordPublication(ctx context.Context, pub *Publication) error {
	r, _, err := s.room(ctx, pub.RoomID)
	if err != nil || r.CurrentRecordingID == "" || s.Recorder == nil {
		return err
	}
	if err := s.Recorder.StartStream(ctx, r.MediaServerID, streamName(r.RoomID, pub.PublicationID)); err != nil {
		return err
	}
	_, err = s.updateRecording(ctx, r.RoomID, r.CurrentRecordingID, func(rec *Recording) bool {
		if !rec.Active() || slices.Contains(rec.Publications, pub.PublicationID) {
			return false
		}
		rec.Publications = append(rec.Publications, pub.PublicationID)
		if !slices.Contains(rec.Participants, pub.ParticipantID) {
			rec.Participants = append(rec.Participants, pub.ParticipantID)
		}
		return true
	})
	return err
}

// recordingFailed records a recorder that could not start or stop
// (rtc.recording.failed) and answers err.
func (s *Service) recordingFailed(ctx context.Context, id RoomID, recordingID string, cause error) (*Recording, error) {
	_, err := s.updateRecording(ctx, id, recordingID, func(r *Recording) bool {
		r.LastError = truncate(cause.Error(), 300)
		return true
	})
	if err != nil {
		return nil, errors.Join(cause, err)
	}
	for attempt := 0; attempt < 5; attempt++ {
		r, kv, err := s.room(ctx, id)
		if err != nil {
			return nil, err
		}
		ev, err := s.roomEvent(r, events.RTCRecordingFailed, systemParticipant, s.now())
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{ev, store.Put(kv.Key, val)}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			break
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrMediaUnavailable, cause)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// updateRecording applies change to a recording under a compare; change
// answers false to leave it as it is.
func (s *Service) updateRecording(ctx context.Context, id RoomID, recordingID string, change func(*Recording) bool) (*Recording, error) {
	for attempt := 0; attempt < 5; attempt++ {
		kv, _, err := store.Get(ctx, s.Store, recordingKey(id, recordingID), store.Local)
		if err != nil {
			return nil, err
		}
		if kv == nil {
			return nil, ErrRecordingNotFound
		}
		rec, err := store.Decode[Recording](kv)
		if err != nil {
			return nil, err
		}
		if !change(&rec) {
			return &rec, nil
		}
		val, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Put(kv.Key, val)}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return &rec, nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: recording %s", store.ErrContended, recordingID)
}

func (s *Service) recording(ctx context.Context, id RoomID, recordingID string) (*Recording, error) {
	if _, err := uuid.Parse(recordingID); err != nil {
		return nil, ErrRecordingNotFound
	}
	kv, _, err := store.Get(ctx, s.Store, recordingKey(id, recordingID), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, ErrRecordingNotFound
	}
	rec, err := store.Decode[Recording](kv)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// CurrentRecording is the room's running recording, nil when none; for
// the room's owner.
func (s *Service) CurrentRecording(ctx context.Context, c Caller, id RoomID) (*Recording, error) {
	r, err := s.Room(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return s.current(ctx, r)
}

// CurrentRecordingAsParticipant is the same for any admitted participant.
func (s *Service) CurrentRecordingAsParticipant(ctx context.Context, id RoomID, token string) (*Recording, error) {
	_, r, err := s.admitted(ctx, id, token)
	if err != nil {
		return nil, err
	}
	return s.current(ctx, r)
}

func (s *Service) current(ctx context.Context, r *Room) (*Recording, error) {
	if r.CurrentRecordingID == "" {
		return nil, nil
	}
	return s.recording(ctx, r.RoomID, r.CurrentRecordingID)
}

// StopRecording stops the room's running recording for its owner.
func (s *Service) StopRecording(ctx context.Context, c Caller, id RoomID, recordingID string) (*Recording, error) {
	if _, err := s.Room(ctx, c, id); err != nil {
		return nil, err
	}
	return s.stopRecording(ctx, id, recordingID)
}

// StopRecordingAsHost stops it for the room's current host.
func (s *Service) StopRecordingAsHost(ctx context.Context, id RoomID, token, recordingID string) (*Recording, error) {
	if _, err := s.host(ctx, id, token); err != nil {
		return nil, err
	}
	return s.stopRecording(ctx, id, recordingID)
}

// stopRecording moves the recording to Stopping, stops every stream's
// recorder (the engine seals each open file and reports it), then to
// Stopped and frees the room for another recording.
func (s *Service) stopRecording(ctx context.Context, id RoomID, recordingID string) (*Recording, error) {
	rec, err := s.updateRecording(ctx, id, recordingID, func(r *Recording) bool {
		if r.State == RecordingStopped || r.State == RecordingStopping {
			return false // a Stopping one is stopped again below
		}
		r.State = RecordingStopping
		return true
	})
	if err != nil {
		return nil, err
	}
	if rec.State == RecordingStopped {
		// A stop whose plan failed after the recording stopped plans
		// it now (the leader's composite worker would, too).
		return rec, s.planComposites(ctx, id, recordingID)
	}
	r, _, err := s.room(ctx, id)
	if err != nil {
		return nil, err
	}
	var errs []error
	sealed := true
	for _, pub := range rec.Publications {
		if s.Recorder != nil {
			done, err := s.Recorder.StopStream(ctx, r.MediaServerID, streamName(id, pub))
			sealed = sealed && done
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Stays Stopping: a later stop tries the recorders again.
		return s.recordingFailed(ctx, id, recordingID, err)
	}
	if !sealed {
		return rec, nil // Stopping; a later stop (or the sweep) finishes it
	}
	now := s.now()
	rec, err = s.updateRecording(ctx, id, recordingID, func(r *Recording) bool {
		r.State, r.StoppedAt = RecordingStopped, &now
		return true
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.changeRoom(ctx, id, func(room *Room) (bool, error) {
		if room.CurrentRecordingID != recordingID {
			return false, nil
		}
		room.CurrentRecordingID = ""
		return true, nil
	}); err != nil {
		return nil, err
	}
	if err := s.planComposites(ctx, id, recordingID); err != nil {
		return nil, err
	}
	return rec, nil
}

// Recordings lists a room's recordings (its runs), newest first, for its
// owner.
func (s *Service) Recordings(ctx context.Context, c Caller, id RoomID) ([]Recording, error) {
	if _, err := s.Room(ctx, c, id); err != nil {
		return nil, err
	}
	prefix := recordingsPrefix + string(id) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return nil, err
	}
	out := make([]Recording, 0, len(resp.KVs))
	for i := len(resp.KVs) - 1; i >= 0; i-- {
		rec, err := store.Decode[Recording](resp.KVs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
