package rooms

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// Roster lists the room's active participants (admitted and waiting) for
// an admitted participant: the host admits from it.
func (s *Service) Roster(ctx context.Context, roomID RoomID, token string) ([]Participant, error) {
	if _, _, err := s.admitted(ctx, roomID, token); err != nil {
		return nil, err
	}
	prefix := participantsPrefix + string(roomID) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return nil, err
	}
	out := []Participant{}
	for _, kv := range resp.KVs {
		p, err := store.Decode[Participant](kv)
		if err != nil {
			return nil, err
		}
		if p.Active() {
			out = append(out, p)
		}
	}
	return out, nil
}

// target reads another participant of the room for a host's action.
func (s *Service) target(ctx context.Context, roomID RoomID, id string) (*Participant, *store.KeyValue, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, nil, ErrNotFound
	}
	kv, _, err := store.Get(ctx, s.Store, participantKey(roomID, ParticipantID(id)), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrNotFound
	}
	p, err := store.Decode[Participant](kv)
	if err != nil {
		return nil, nil, err
	}
	if !p.Active() {
		return nil, nil, ErrNotFound
	}
	return &p, kv, nil
}

// Admit lets a participant held in the waiting room in, for the room's
// current host (rtc.participant.joined, the host as ParticipantId and the
// admitted participant as TargetParticipantId). Admitting an admitted
// participant answers it unchanged.
func (s *Service) Admit(ctx context.Context, roomID RoomID, token, participantID string) (*Participant, error) {
	for attempt := 0; attempt < 5; attempt++ {
		host, err := s.host(ctx, roomID, token)
		if err != nil {
			return nil, err
		}
		p, kv, err := s.target(ctx, roomID, participantID)
		if err != nil {
			return nil, err
		}
		if p.State == ParticipantAdmitted {
			return p, nil
		}
		r, rkv, err := s.room(ctx, roomID)
		if err != nil {
			return nil, err
		}
		now := s.now()
		p.State = ParticipantAdmitted
		r.LastActiveAt = now
		ev, err := s.roomEventWithTarget(r, events.RTCParticipantJoined, host.ParticipantID, &p.ParticipantID, now)
		if err != nil {
			return nil, err
		}
		pval, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		rval, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{
			Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision), store.ModRevisionIs(rkv.Key, rkv.ModRevision)},
			Then:     []store.Op{ev, store.Put(kv.Key, pval), store.Put(rkv.Key, rval)},
		})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return p, nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: participant %s", store.ErrContended, participantID)
}

// HandOver makes another admitted participant the room's host; the
// caller becomes a member in the same Txn (both records compared), so
// the former host is refused host actions from then on.
func (s *Service) HandOver(ctx context.Context, roomID RoomID, token, participantID string) (*Participant, error) {
	for attempt := 0; attempt < 5; attempt++ {
		host, err := s.host(ctx, roomID, token)
		if err != nil {
			return nil, err
		}
		hkv, _, err := store.Get(ctx, s.Store, participantKey(roomID, host.ParticipantID), store.Local)
		if err != nil {
			return nil, err
		}
		if hkv == nil {
			return nil, ErrTokenInvalid
		}
		p, kv, err := s.target(ctx, roomID, participantID)
		if err != nil {
			return nil, err
		}
		if p.ParticipantID == host.ParticipantID {
			return p, nil
		}
		if p.State != ParticipantAdmitted {
			return nil, fmt.Errorf("%w: only an admitted participant can become host", ErrForbidden)
		}
		host.Role, p.Role = RoleMember, RoleHost
		hval, err := json.Marshal(host)
		if err != nil {
			return nil, err
		}
		pval, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{
			Compares: []store.Compare{store.ModRevisionIs(hkv.Key, hkv.ModRevision), store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then:     []store.Op{store.Put(hkv.Key, hval), store.Put(kv.Key, pval)},
		})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return p, nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: participant %s", store.ErrContended, participantID)
}
