package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

func participantKey(room RoomID, id ParticipantID) string {
	return participantsPrefix + string(room) + "/" + string(id)
}

// Join consumes an access ticket and admits its user into the room: at
// once, or into the waiting room when the room has one and the ticket
// does not bypass it. The ticket's deletion, the participant, the room's
// event sequence and rtc.participant.joined are one Txn that requires the
// ticket unchanged since it was read, so of two joins with one ticket
// exactly one succeeds; the other gets ErrTicketConsumed.
func (s *Service) Join(ctx context.Context, roomID RoomID, req JoinRequest) (*Joined, error) {
	if req.AccessTicket == "" {
		return nil, ErrTicketInvalid
	}
	if len(req.DisplayName) > maxNameLength || len(req.Platform) > 64 || len(req.ClientVersion) > 64 {
		return nil, fmt.Errorf("%w: displayName, platform or clientVersion too long", ErrInvalid)
	}
	tkey := ticketsPrefix + hashHex(req.AccessTicket)
	for attempt := 0; attempt < 5; attempt++ {
		tkv, _, err := store.Get(ctx, s.Store, tkey, store.Local)
		if err != nil {
			return nil, err
		}
		if tkv == nil {
			return nil, ErrTicketConsumed
		}
		t, err := store.Decode[accessTicket](tkv)
		if err != nil {
			return nil, err
		}
		now := s.now()
		if t.RoomID != roomID || !now.Before(t.ExpiresAt) {
			return nil, ErrTicketInvalid
		}
		r, rkv, err := s.room(ctx, roomID)
		if err != nil {
			return nil, err
		}
		if r.Status != RoomOpen {
			return nil, ErrRoomClosed
		}
		joined, ops, err := s.admit(r, t, req, now)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{
			Compares: []store.Compare{store.ModRevisionIs(tkey, tkv.ModRevision), store.ModRevisionIs(rkv.Key, rkv.ModRevision)},
			Then:     append([]store.Op{store.Delete(tkey)}, ops...),
		})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return joined, nil
		}
		// The ticket went, or the room changed (another event): look again
		// at the newer state.
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: room %s", store.ErrContended, roomID)
}

// admit builds the participant a ticket admits, its token, and the writes
// that record it (participant, room, and the joined event when admitted).
func (s *Service) admit(r *Room, t accessTicket, req JoinRequest, now time.Time) (*Joined, []store.Op, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, nil, err
	}
	secret, err := randomSecret()
	if err != nil {
		return nil, nil, err
	}
	name := req.DisplayName
	if name == "" {
		name = t.DisplayName
	}
	p := Participant{ParticipantID: ParticipantID(id.String()), RoomID: r.RoomID, SubjectIssuer: t.SubjectIssuer, SubjectID: t.SubjectID,
		DisplayName: name, Role: t.Role, Capabilities: t.Capabilities, State: ParticipantAdmitted, TokenVersion: 1, TokenHash: hashHex(secret),
		Platform: req.Platform, ClientVersion: req.ClientVersion, JoinedAt: now, LastHeartbeatAt: now}
	if r.WaitingRoom && !t.BypassWaitingRoom && t.Role != RoleHost {
		p.State = ParticipantWaiting
	}
	r.LastActiveAt = now
	var ops []store.Op
	if p.State == ParticipantAdmitted {
		ev, err := s.roomEvent(r, events.RTCParticipantJoined, p.ParticipantID, now)
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, ev)
	}
	pval, err := json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	rval, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	ops = append(ops, store.Put(participantKey(r.RoomID, p.ParticipantID), pval), store.Put(roomsPrefix+string(r.RoomID), rval))
	return &Joined{Participant: p, Token: participantToken(p.ParticipantID, secret)}, ops, nil
}

// Verify finds the active participant a token (X-Svc-RTC-Token) belongs
// to in this room: the newest token of a participant who has not left or
// timed out.
func (s *Service) Verify(ctx context.Context, roomID RoomID, token string) (*Participant, error) {
	p, _, err := s.verify(ctx, roomID, token)
	return p, err
}

func (s *Service) verify(ctx context.Context, roomID RoomID, token string) (*Participant, *store.KeyValue, error) {
	id, secret, ok := parseParticipantToken(token)
	if !ok {
		return nil, nil, ErrTokenInvalid
	}
	kv, _, err := store.Get(ctx, s.Store, participantKey(roomID, id), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrTokenInvalid
	}
	p, err := store.Decode[Participant](kv)
	if err != nil {
		return nil, nil, err
	}
	if !p.Active() || !sameHash(secret, p.TokenHash) {
		return nil, nil, ErrTokenInvalid
	}
	if s.now().Sub(p.LastHeartbeatAt) >= s.heartbeatTimeout() {
		// Timed out; the leader's sweep records it soon, but the token
		// ends now.
		return nil, nil, fmt.Errorf("%w: no heartbeat for %s", ErrTokenInvalid, s.heartbeatTimeout())
	}
	return &p, kv, nil
}

// RefreshToken rotates a participant's token: tokenVersion moves on and
// the old token is invalid from the Txn on, on every node that has applied
// it.
func (s *Service) RefreshToken(ctx context.Context, roomID RoomID, token string) (newToken string, version int, err error) {
	p, kv, err := s.verify(ctx, roomID, token)
	if err != nil {
		return "", 0, err
	}
	secret, err := randomSecret()
	if err != nil {
		return "", 0, err
	}
	p.TokenVersion++
	p.TokenHash = hashHex(secret)
	val, err := json.Marshal(p)
	if err != nil {
		return "", 0, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
		Then: []store.Op{store.Put(kv.Key, val)}})
	if err != nil {
		return "", 0, err
	}
	if !resp.Succeeded {
		// Refreshed (or ended) by another request first: this token is the
		// old one now.
		return "", 0, ErrTokenInvalid
	}
	return participantToken(p.ParticipantID, secret), p.TokenVersion, nil
}

// Heartbeat records that the participant's device is alive. It writes to
// the store at most once per third of the timeout (heartbeats are not
// state changes; the timeout only needs them that often).
func (s *Service) Heartbeat(ctx context.Context, roomID RoomID, token string) error {
	p, kv, err := s.verify(ctx, roomID, token)
	if err != nil {
		return err
	}
	now := s.now()
	if now.Sub(p.LastHeartbeatAt) < s.heartbeatTimeout()/3 {
		return nil
	}
	p.LastHeartbeatAt = now
	val, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// A lost race means another request wrote the participant just now;
	// either it was a heartbeat too, or the participant ended.
	_, err = s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
		Then: []store.Op{store.Put(kv.Key, val)}})
	return err
}

// Leave ends the participant's session (rtc.participant.left).
func (s *Service) Leave(ctx context.Context, roomID RoomID, token string) error {
	p, kv, err := s.verify(ctx, roomID, token)
	if err != nil {
		return err
	}
	err = s.end(ctx, p, kv, ParticipantLeft, events.RTCParticipantLeft)
	if errors.Is(err, errRetry) {
		return ErrTokenInvalid // ended meanwhile
	}
	if err != nil {
		return err
	}
	return s.released(ctx, p)
}

// released stops the publications of a participant who ended.
func (s *Service) released(ctx context.Context, p *Participant) error {
	r, _, err := s.room(ctx, p.RoomID)
	if err != nil {
		return err
	}
	return s.releaseParticipant(ctx, r, p.ParticipantID)
}

// end moves an active participant to a final state with its event, in one
// Txn that requires the participant unchanged since kv was read.
func (s *Service) end(ctx context.Context, p *Participant, kv *store.KeyValue, state, event string) error {
	for attempt := 0; attempt < 5; attempt++ {
		r, rkv, err := s.room(ctx, p.RoomID)
		if err != nil {
			return err
		}
		now := s.now()
		wasAdmitted := p.State == ParticipantAdmitted
		p.State = state
		r.LastActiveAt = now
		var ops []store.Op
		if wasAdmitted {
			ev, err := s.roomEvent(r, event, p.ParticipantID, now)
			if err != nil {
				return err
			}
			ops = append(ops, ev)
		}
		pval, err := json.Marshal(p)
		if err != nil {
			return err
		}
		rval, err := json.Marshal(r)
		if err != nil {
			return err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{
			Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision), store.ModRevisionIs(rkv.Key, rkv.ModRevision)},
			Then:     append(ops, store.Put(kv.Key, pval), store.Put(rkv.Key, rval)),
		})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return err
		}
		// Only the room moved on (another event) if the participant is
		// unchanged. A leave that raced the device's own heartbeat goes
		// on from the newer record; anything else (ended, refreshed, or a
		// heartbeat that saves a participant from timing out) wins.
		cur, _, err := store.Get(ctx, s.Store, kv.Key, store.Local)
		if err != nil {
			return err
		}
		if cur == nil {
			return errRetry
		}
		if cur.ModRevision != kv.ModRevision {
			q, err := store.Decode[Participant](cur)
			if err != nil {
				return err
			}
			if state != ParticipantLeft || !q.Active() || q.TokenHash != p.TokenHash {
				return errRetry
			}
			*p, kv = q, cur
			continue
		}
		p.State = map[bool]string{true: ParticipantAdmitted, false: ParticipantWaiting}[wasAdmitted]
	}
	return fmt.Errorf("%w: participant %s", store.ErrContended, p.ParticipantID)
}

// SweepTimedOut ends every active participant whose last heartbeat is
// older than the timeout (rtc.participant.timed_out) and reports how many
// it ended. The leader runs it periodically.
func (s *Service) SweepTimedOut(ctx context.Context) (int, error) {
	resp, err := s.Store.Range(ctx, participantsPrefix, store.RangeOptions{End: store.PrefixEnd(participantsPrefix), Consistency: store.Local})
	if err != nil {
		return 0, err
	}
	now := s.now()
	ended := 0
	for _, kv := range resp.KVs {
		p, err := store.Decode[Participant](kv)
		if err != nil {
			return ended, err
		}
		if !p.Active() || now.Sub(p.LastHeartbeatAt) < s.heartbeatTimeout() {
			continue
		}
		switch err := s.end(ctx, &p, kv, ParticipantTimedOut, events.RTCParticipantTimedOut); {
		case err == nil:
			ended++
			if err := s.released(ctx, &p); err != nil {
				return ended, err
			}
		case errors.Is(err, errRetry):
			// a heartbeat or a leave came meanwhile
		default:
			return ended, err
		}
	}
	return ended, nil
}
