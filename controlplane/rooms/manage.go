package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Index serves the room listing (by owner and status) and the leader's
// sweep of open rooms.
var Index = query.Index{Name: "rtc_rooms", Prefix: roomsPrefix, Columns: []query.Column{
	{Name: "owner_token_id", Type: "TEXT", Path: "$.ownerTokenId"},
	{Name: "status", Type: "TEXT", Path: "$.status", NoIndex: true},
	{Name: "current_recording_id", Type: "TEXT", Path: "$.currentRecordingId", NoIndex: true},
}}

// OwnedPrefixes are the prefixes of this package.
var OwnedPrefixes = []string{"/rtc/"}

// DefaultEmptyRoomTimeout closes an open room nobody has been in for this
// long (the contract leaves it to us): long enough for a meeting's
// participants to reconnect, short enough that forgotten rooms do not keep
// media servers' state.
const DefaultEmptyRoomTimeout = 10 * time.Minute

func (s *Service) emptyRoomTimeout() time.Duration {
	if s.EmptyRoomTimeout > 0 {
		return s.EmptyRoomTimeout
	}
	return DefaultEmptyRoomTimeout
}

// systemParticipant is the ParticipantId of events the platform causes
// (contract A: "possibly system").
const systemParticipant = "system"

// ListRooms pages the caller's rooms, newest first, optionally of one
// status.
func (s *Service) ListRooms(ctx context.Context, c Caller, status string, page, size int) ([]Room, int64, error) {
	where := []query.Cond{query.Eq("owner_token_id", c.TokenID)}
	switch status {
	case "":
	case RoomOpen, RoomClosed:
		where = append(where, query.Eq("status", status))
	default:
		return nil, 0, fmt.Errorf("%w: status is Open or Closed", ErrInvalid)
	}
	return query.Page(ctx, s.Reader, query.Query{Index: Index.Name, Where: where, Order: []query.Order{query.Desc(query.Key)}}, page, size,
		query.JSON[Room])
}

// CloseRoom closes a room the caller owns (rtc.room.closed): its
// publications stop and their media is released, its participants' tokens
// end, and no ticket of it admits anyone any more. Closing a closed room
// answers it unchanged.
func (s *Service) CloseRoom(ctx context.Context, c Caller, id RoomID) (*Room, error) {
	if _, err := s.Room(ctx, c, id); err != nil {
		return nil, err
	}
	return s.close(ctx, id, nil)
}

// close closes a room; when still is set, only while still holds for the
// room as read in the closing Txn (a join changes the room record, so a
// room found empty is closed only if nobody joined since).
func (s *Service) close(ctx context.Context, id RoomID, still func(*Room) bool) (*Room, error) {
	for attempt := 0; attempt < 5; attempt++ {
		r, _, err := s.room(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status == RoomClosed {
			return r, nil
		}
		if still != nil && !still(r) {
			return r, errRetry
		}
		// Media first: a room answered Closed has released it and sealed
		// its recording. The publications' events moved the room on, so
		// it is read again.
		if r.CurrentRecordingID != "" {
			if _, err := s.stopRecording(ctx, id, r.CurrentRecordingID); err != nil {
				return nil, err
			}
		}
		if err := s.releaseParticipant(ctx, r, ""); err != nil {
			return nil, err
		}
		r, kv, err := s.room(ctx, id)
		if err != nil {
			return nil, err
		}
		if still != nil && !still(r) {
			return r, errRetry
		}
		now := s.now()
		r.Status, r.ClosedAt = RoomClosed, &now
		ev, err := s.roomEvent(r, events.RTCRoomClosed, systemParticipant, now)
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
			return r, s.endParticipants(ctx, r)
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: room %s", store.ErrContended, id)
}

// endParticipants ends the tokens of a closed room's participants.
func (s *Service) endParticipants(ctx context.Context, r *Room) error {
	prefix := participantsPrefix + string(r.RoomID) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return err
	}
	for _, kv := range resp.KVs {
		p, err := store.Decode[Participant](kv)
		if err != nil {
			return err
		}
		if !p.Active() {
			continue
		}
		p.State = ParticipantLeft
		val, err := json.Marshal(p)
		if err != nil {
			return err
		}
		// A lost compare is a participant that ended (or refreshed) just
		// now; a refreshed one is caught by the room's status.
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Put(kv.Key, val)}}); err != nil {
			return err
		}
	}
	return nil
}

// activeParticipants counts the room's participants still holding it.
func (s *Service) activeParticipants(ctx context.Context, id RoomID) (int, error) {
	prefix := participantsPrefix + string(id) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range resp.KVs {
		p, err := store.Decode[Participant](kv)
		if err != nil {
			return 0, err
		}
		if p.Active() {
			n++
		}
	}
	return n, nil
}

// Sweep is the leader's pass: participants silent past the heartbeat
// timeout end (rtc.participant.timed_out) and release their media,
// Active publications whose stream never became ready within
// ReadyTimeout fail (rtc.publication.failed), open rooms nobody has been in for EmptyRoomTimeout (or whose scheduled end
// has passed with nobody in them) close (rtc.room.closed), recordings
// still Stopping are stopped again, the failed tracks of running ones
// are started again (retryTracks), and the client bindings of expired
// playback tickets go.
func (s *Service) Sweep(ctx context.Context) (timedOut, closed int, err error) {
	timedOut, err = s.SweepTimedOut(ctx)
	if err != nil {
		return timedOut, 0, err
	}
	open, err := query.All(ctx, s.Reader, query.Query{Index: Index.Name, Where: []query.Cond{query.Eq("status", RoomOpen)}}, query.JSON[Room])
	if err != nil {
		return timedOut, 0, err
	}
	errs := []error{s.sweepPlaybackUses(ctx)}
	for _, r := range open {
		if _, err := s.sweepPublications(ctx, &r); err != nil {
			errs = append(errs, err)
		}
	}
	now := s.now()
	due := func(r *Room) bool {
		idle := now.Sub(r.LastActiveAt) >= s.emptyRoomTimeout()
		ended := r.ScheduledTo != nil && now.After(*r.ScheduledTo) && now.Sub(r.LastActiveAt) >= s.heartbeatTimeout()
		return idle || ended
	}
	for _, r := range open {
		if !due(&r) {
			continue
		}
		n, err := s.activeParticipants(ctx, r.RoomID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n > 0 {
			continue
		}
		switch _, err := s.close(ctx, r.RoomID, due); {
		case err == nil:
			closed++
		case errors.Is(err, errRetry):
			// someone joined meanwhile
		default:
			errs = append(errs, err)
		}
	}
	// Recordings left Stopping (the media server had not confirmed every
	// sealed track) are stopped again until they are Stopped.
	recording, err := query.All(ctx, s.Reader, query.Query{Index: Index.Name, Where: []query.Cond{query.Ne("current_recording_id", "")}},
		query.JSON[Room])
	if err != nil {
		return timedOut, closed, errors.Join(append(errs, err)...)
	}
	for _, r := range recording {
		rec, err := s.recording(ctx, r.RoomID, r.CurrentRecordingID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if rec.State == RecordingStopping {
			if _, err := s.stopRecording(ctx, r.RoomID, rec.RecordingID); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.retryTracks(ctx, &r, rec); err != nil {
			errs = append(errs, err)
		}
	}
	return timedOut, closed, errors.Join(errs...)
}

// RunSweeper sweeps every interval until ctx ends (the leader runs it).
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			report(err)
		}
	}
}
