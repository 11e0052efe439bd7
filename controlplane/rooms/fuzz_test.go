package rooms

import (
	"testing"
	"time"
)

// FuzzParticipantToken: any header value parses without panicking, and
// what parses is "rtc.<uuid>.<secret>" exactly.
func FuzzParticipantToken(f *testing.F) {
	f.Add("rtc.0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f.c2VjcmV0")
	f.Add("rtc..")
	f.Add("rat_abc")
	f.Add("svc_pat_x")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, ok := parseParticipantToken(s)
		if ok && participantToken(id, secret) != s {
			t.Fatalf("%q parsed as %q %q", s, id, secret)
		}
	})
}

// FuzzEngineTicket: any svc_ticket an engine relays parses without
// panicking, and only the ticket made for a stream passes the MAC check
// for it: a changed byte, another stream or another kind fails.
func FuzzEngineTicket(f *testing.F) {
	s := &Service{MACKeys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}}
	good := s.engineTicket(ticketWHEP, "room.pub", "0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f", time.Unix(2000000000, 0))
	f.Add(good)
	f.Add("rte.pub.x.1.AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("L.0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f.AAAA")
	f.Fuzz(func(t *testing.T, ticket string) {
		p, ok := parseEngineTicket(ticket)
		if !ok {
			return
		}
		if s.validMAC(p, "room.pub") != (ticket == good) {
			t.Fatalf("%q: MAC check disagrees (made for the stream: %v)", ticket, ticket == good)
		}
		if s.validMAC(p, "room.other") {
			t.Fatalf("%q passes for another stream", ticket)
		}
	})
}
