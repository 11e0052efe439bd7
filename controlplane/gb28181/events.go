package gb28181

import (
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// deviceEvent is the data of every device.gb28181.* event, with contract
// A's capitalisation exactly ("Event data fields").
type deviceEvent struct {
	DeviceID       string    `json:"DeviceId"`
	Name           *string   `json:"Name"`
	Direction      string    `json:"Direction"`
	Status         string    `json:"Status"`
	PreviousStatus *string   `json:"previousStatus"`
	Reason         string    `json:"reason"`
	OccurredAtUTC  time.Time `json:"occurredAtUtc"`
}

// eventOp builds the outbox write of one device event; it goes into the
// Txn of the change it reports.
func (s *Service) eventOp(name string, id DeviceID, devName *string, status Status, previous *Status, reason string, at time.Time) (store.Op, error) {
	return deviceEventOp(s.nodeID, name, id, devName, status, previous, reason, at)
}

// deviceEventOp is eventOp for an event written by nodeID.
func deviceEventOp(nodeID, name string, id DeviceID, devName *string, status Status, previous *Status, reason string, at time.Time) (store.Op, error) {
	data := deviceEvent{DeviceID: string(id), Name: devName, Direction: DirectionInbound, Status: string(status), Reason: reason, OccurredAtUTC: at.UTC()}
	if previous != nil {
		p := string(*previous)
		data.PreviousStatus = &p
	}
	ev, err := events.New(name, events.SourceGB28181, nodeID, data)
	if err != nil {
		return store.Op{}, err
	}
	ev.OccurredAtUTC = at.UTC()
	return events.Op(ev)
}
