package gb28181

import (
	"errors"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"go.uber.org/zap"
)

// onMessage takes a device's MANSCDP MESSAGE: keep-alives, and the
// responses to the platform's queries.
func (s *Service) onMessage(req *sip.Request, tx sip.ServerTransaction) {
	from := req.From()
	if from == nil || !ValidCode(from.Address.User) {
		s.respond(tx, req, 400, "Bad Request: the From user is not a 20-digit GB28181 code", nil)
		return
	}
	id := DeviceID(from.Address.User)
	m, err := ParseManscdp(req.Body())
	if err != nil {
		s.log.Info("GB28181 MANSCDP refused", zap.String("deviceId", string(id)), zap.String("source", req.Source()), zap.Error(err))
		s.respond(tx, req, 400, "Bad Request: invalid MANSCDP body", nil)
		return
	}
	now := s.now()
	switch m.CmdType {
	case "Keepalive":
		err := s.keepalive(id, strings.ToLower(req.Transport()), req.Source(), now)
		if errors.Is(err, ErrDeviceNotFound) {
			// Not registered (or unregistered): refusing makes the device
			// register again rather than keep talking to nobody.
			s.respond(tx, req, 403, "Forbidden: not registered", nil)
			return
		}
		if err != nil {
			s.log.Warn("GB28181 keep-alive not recorded", zap.String("deviceId", string(id)), zap.Error(err))
			s.respond(tx, req, 500, "Server Internal Error", nil)
			return
		}
	default:
		if !s.registered(id) {
			s.respond(tx, req, 403, "Forbidden: not registered", nil)
			return
		}
		s.touch(id, now)
		// The device hears its 200 before anything the message leads to:
		// a MediaStatus 121 ends the playback with a BYE, and a device
		// still waiting for the MESSAGE's answer may take the BYE as out of
		// order.
		s.respond(tx, req, 200, "OK", nil)
		s.dispatch(id, m, callID(req))
		return
	}
	s.respond(tx, req, 200, "OK", nil)
}

// registered reports whether this node holds the device online.
func (s *Service) registered(id DeviceID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.live[id]
	return p != nil && p.status == StatusOnline
}

// touch counts any message from an online device as a sign of life.
func (s *Service) touch(id DeviceID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.live[id]; p != nil && p.status == StatusOnline {
		p.lastSeen = now
	}
}

// dispatch hands a query's response or a notification to whoever waits
// for it.
func (s *Service) dispatch(id DeviceID, m Manscdp, callID string) {
	s.log.Debug("GB28181 MANSCDP", zap.String("deviceId", string(id)), zap.String("cmdType", m.CmdType), zap.Int64("sn", m.SN))
	switch {
	case m.Root == "Response" && m.CmdType == "Catalog":
		s.catalogPage(id, m)
	case m.Root == "Response" && m.CmdType == "RecordInfo":
		s.recordPage(id, m)
	case m.Root == "Response" && m.CmdType == "PresetQuery":
		s.presetAnswer(id, m)
	case m.Root == "Notify" && m.CmdType == "MediaStatus" && strings.TrimSpace(m.NotifyType) == "121":
		// The end of a playback's file (GB/T 28181 A.2.5.4). Devices send
		// it with the Call-ID of the playback's INVITE.
		s.mediaEnded(callID, "the device reached the end of the recording (MediaStatus 121)")
	}
}

// callID is a request's Call-ID, empty when it has none.
func callID(req *sip.Request) string {
	if h := req.CallID(); h != nil {
		return h.Value()
	}
	return ""
}
