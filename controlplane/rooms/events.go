package rooms

import (
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// roomCreatedData is rtc.room.created's data (contract A); the event id is
// the room id.
type roomCreatedData struct {
	RoomID           RoomID     `json:"RoomId"`
	Name             string     `json:"Name"`
	RoomType         string     `json:"RoomType"`
	MediaServerID    string     `json:"MediaServerId"`
	Status           string     `json:"Status"`
	ScheduledStartAt *time.Time `json:"ScheduledStartAtUtc"`
	ScheduledEndAt   *time.Time `json:"ScheduledEndAtUtc"`
}

// roomEventData is the data of rtc.room.closed, rtc.participant.*,
// rtc.publication.* and rtc.recording.failed (contract A): ids and the
// room's event sequence, never a name, a subject, chat or a URL.
type roomEventData struct {
	RoomID              RoomID    `json:"RoomId"`
	Sequence            int64     `json:"Sequence"`
	EventType           string    `json:"EventType"`
	ParticipantID       string    `json:"ParticipantId"`
	TargetParticipantID *string   `json:"TargetParticipantId"`
	OccurredAtUTC       time.Time `json:"occurredAtUtc"`
}

func (s *Service) roomCreatedEvent(r *Room) (store.Op, error) {
	ev, err := events.New(events.RTCRoomCreated, events.SourceRTC, s.NodeID, roomCreatedData{RoomID: r.RoomID, Name: r.Name, RoomType: r.RoomType,
		MediaServerID: r.MediaServerID, Status: r.Status, ScheduledStartAt: r.ScheduledFrom, ScheduledEndAt: r.ScheduledTo})
	if err != nil {
		return store.Op{}, err
	}
	ev.EventID = string(r.RoomID)
	ev.OccurredAtUTC = r.CreatedAt
	return events.Op(ev)
}

// roomEvent numbers the next event of r (r.Sequence moves on; the caller
// writes r in the same Txn) and returns its outbox operation.
func (s *Service) roomEvent(r *Room, name string, participant ParticipantID, at time.Time) (store.Op, error) {
	return s.roomEventWithTarget(r, name, participant, nil, at)
}

// roomEventWithTarget is roomEvent for an action of one participant on
// another (TargetParticipantId).
func (s *Service) roomEventWithTarget(r *Room, name string, participant ParticipantID, target *ParticipantID, at time.Time) (store.Op, error) {
	r.Sequence++
	var tgt *string
	if target != nil {
		t := string(*target)
		tgt = &t
	}
	ev, err := events.New(name, events.SourceRTC, s.NodeID, roomEventData{RoomID: r.RoomID, Sequence: r.Sequence, EventType: name,
		ParticipantID: string(participant), TargetParticipantID: tgt, OccurredAtUTC: at})
	if err != nil {
		return store.Op{}, err
	}
	ev.OccurredAtUTC = at
	return events.Op(ev)
}
