package playback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/google/uuid"
)

// TicketParam is the URL query parameter that carries a ticket.
const TicketParam = "svc_ticket"

// Ticket kinds: a lease ticket works while its lease is Active; a one-time
// ticket works for one player; a media link's for one client until it
// expires; a system ticket (stateless, its id a UUIDv7 whose time bounds
// it) only for the control plane's own reads of recorded resources.
const (
	kindLease   = "L"
	kindOneTime = "O"
	kindLink    = "M"
	kindSystem  = "S"
)

var b64 = base64.RawURLEncoding.Strict()

// ticketMAC binds a grant to the stream it plays; 128 bits keep URLs short.
func ticketMAC(key []byte, kind, id, vhost, app, stream string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join([]string{"ticket", kind, id, vhost, app, stream}, "|")))
	return m.Sum(nil)[:16]
}

// ticket is <kind>.<grant id>.<mac>; it never changes for a lease, so the
// URLs a lease hands out stay the same across renewals.
func (s *Service) ticket(kind, id, vhost, app, stream string) string {
	return kind + "." + id + "." + b64.EncodeToString(ticketMAC(s.MACKeys[0], kind, id, vhost, app, stream))
}

var validKind = map[string]bool{kindLease: true, kindOneTime: true, kindLink: true, kindSystem: true}

// parsedTicket is a ticket whose MAC matched the stream it was presented for.
type parsedTicket struct {
	kind, id string
}

// parseTicket checks a ticket against the stream a player asked for; any
// tampering, or a ticket of another stream, fails here without a lookup.
func (s *Service) parseTicket(tok, vhost, app, stream string) (parsedTicket, bool) {
	if len(tok) > 128 {
		return parsedTicket{}, false
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || !validKind[parts[0]] {
		return parsedTicket{}, false
	}
	if _, err := uuid.Parse(parts[1]); err != nil {
		return parsedTicket{}, false
	}
	got, err := b64.DecodeString(parts[2])
	if err != nil || len(got) != 16 {
		return parsedTicket{}, false
	}
	for _, k := range s.MACKeys {
		if hmac.Equal(got, ticketMAC(k, parts[0], parts[1], vhost, app, stream)) {
			return parsedTicket{kind: parts[0], id: parts[1]}, true
		}
	}
	return parsedTicket{}, false
}
