package rooms

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// App is the engine application every room stream lives under; its
// streams are "<roomId>.<publicationId>". The engine's hooks for this app
// are decided here (AuthorizeEngine), never by channels or leases.
const App = "rtc"

// vhost is the engine's default virtual host, where room streams live.
const vhost = "__defaultVhost__"

// Media is the room's SFU: the media server's WHIP/WHEP signalling, which
// the control plane relays (the device talks only to the control plane
// for signalling; its media goes to the engine's WebRTC port).
type Media interface {
	// Offer posts an SDP offer to the engine's WHIP ("whip") or WHEP
	// ("whep") endpoint of a stream with an engine ticket, and returns the
	// answer, the engine's session id and the notes it sent.
	Offer(ctx context.Context, mediaServerID, kind, stream, ticket string, sdp []byte) (answer []byte, session string, notes []string, err error)
	// Trickle sends an SDP fragment (trickle ICE) to an engine session.
	Trickle(ctx context.Context, mediaServerID, kind, stream, session string, frag []byte) error
	// Release ends an engine session (DELETE on its resource); an unknown
	// session is not an error.
	Release(ctx context.Context, mediaServerID, kind, stream, session string) error
	// PlayURL is the engine's HTTP-FLV URL of a stream, without ticket.
	PlayURL(ctx context.Context, mediaServerID, stream string) (string, error)
	// PickMediaServer chooses a media server for a room that names none.
	PickMediaServer(ctx context.Context) (string, error)
}

// Engine ticket kinds: what a ticket the control plane hands the engine
// admits. Each is bound by its MAC to one stream, one participant and an
// expiry, so a publish ticket never plays and a subscription's WHEP ticket
// never opens HTTP-FLV.
const (
	ticketPublish = "pub"
	ticketWHEP    = "sub"
	ticketFLV     = "flv"
)

// Lifetimes of engine tickets: a relayed offer reaches the engine at once;
// a playback ticket goes to a device's player.
const (
	relayTicketLifetime    = 30 * time.Second
	PlaybackTicketLifetime = 60 * time.Second
)

var b64 = base64.RawURLEncoding.Strict()

func streamName(room RoomID, publication string) string { return string(room) + "." + publication }

// engineTicket is "rte.<kind>.<participant>.<expiry unix>.<mac>".
func (s *Service) engineTicket(kind, stream string, participant ParticipantID, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return "rte." + kind + "." + string(participant) + "." + e + "." + b64.EncodeToString(ticketMAC(s.MACKeys[0], kind, stream, string(participant), e))
}

func ticketMAC(key []byte, kind, stream, participant, exp string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join([]string{"rtc-engine-ticket", kind, vhost, App, stream, participant, exp}, "|")))
	return m.Sum(nil)[:16]
}

// parsedEngineTicket is an engine ticket taken apart, not yet checked.
type parsedEngineTicket struct {
	kind, participant, exp string
	mac                    []byte
}

// parseEngineTicket splits a ticket from an engine hook's parameters.
func parseEngineTicket(ticket string) (parsedEngineTicket, bool) {
	if len(ticket) > 256 {
		return parsedEngineTicket{}, false
	}
	parts := strings.Split(ticket, ".")
	if len(parts) != 5 || parts[0] != "rte" {
		return parsedEngineTicket{}, false
	}
	mac, err := b64.DecodeString(parts[4])
	if err != nil || len(mac) != 16 {
		return parsedEngineTicket{}, false
	}
	return parsedEngineTicket{kind: parts[1], participant: parts[2], exp: parts[3], mac: mac}, true
}

// validMAC checks a ticket's MAC for a stream under any of the keys.
func (s *Service) validMAC(t parsedEngineTicket, stream string) bool {
	ok := false
	for _, k := range s.MACKeys {
		ok = ok || hmac.Equal(t.mac, ticketMAC(k, t.kind, stream, t.participant, t.exp))
	}
	return ok
}

// EngineRequest is a hook of the engine for a room stream.
type EngineRequest struct {
	Publish                 bool
	Vhost, Stream, Protocol string
	Ticket                  string
	// RemoteAddr is the client's address (host:port) as the engine saw it.
	RemoteAddr string
}

// AuthorizeEngine decides on_publish and on_play of a room stream: only
// a ticket the control plane made for this stream, this use, a
// participant still in the room and (for players) a publication still
// Active. It answers a reason when it refuses.
func (s *Service) AuthorizeEngine(ctx context.Context, r EngineRequest) (bool, string, error) {
	t, ok := parseEngineTicket(r.Ticket)
	if !ok || (r.Vhost != "" && r.Vhost != vhost) {
		return false, "no room ticket for this stream", nil
	}
	kind, participant, exp := t.kind, t.participant, t.exp
	switch {
	case r.Publish && kind == ticketPublish:
	case !r.Publish && kind == ticketWHEP && r.Protocol == "webrtc":
	case !r.Publish && kind == ticketFLV && r.Protocol == "http-flv":
	default:
		return false, "the room ticket is not for this use", nil
	}
	if !s.validMAC(t, r.Stream) {
		return false, "no room ticket for this stream", nil
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.now().Before(time.Unix(unix, 0)) {
		return false, "the room ticket expired", nil
	}
	roomID, pubID, _ := strings.Cut(r.Stream, ".")
	p, err := s.participant(ctx, RoomID(roomID), ParticipantID(participant))
	if err != nil {
		return false, "", err
	}
	if p == nil || p.State != ParticipantAdmitted {
		return false, "the participant is not in the room", nil
	}
	if r.Publish {
		return true, "", nil
	}
	pub, _, err := s.publication(ctx, RoomID(roomID), pubID)
	if errors.Is(err, ErrNotFound) || (err == nil && pub.State != PublicationActive) {
		return false, "the publication is not active", nil
	}
	if err != nil {
		return false, "", err
	}
	if kind == ticketFLV {
		return s.bindPlayback(ctx, t, time.Unix(unix, 0), r.RemoteAddr)
	}
	return true, "", nil
}

// flvUsePrefix holds, per HTTP-FLV playback ticket used, the client it is
// bound to, until the ticket expires.
const flvUsePrefix = "/rtc/flv-use/"

// flvUse is the client a playback ticket admits.
type flvUse struct {
	Client    string    `json:"client"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// bindPlayback makes a playback ticket single-use: its first request binds
// it to the client's address and requests from anywhere else are refused.
// An HTTP-FLV player reconnects with the same URL, so single use cannot
// mean one request (as with the recordings' media links). Of two clients
// racing for a fresh ticket one wins the compare.
func (s *Service) bindPlayback(ctx context.Context, t parsedEngineTicket, exp time.Time, remoteAddr string) (bool, string, error) {
	client := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		client = h
	}
	if client == "" {
		return false, "the engine did not say which client plays", nil
	}
	sum := sha256.Sum256(t.mac)
	key := flvUsePrefix + hex.EncodeToString(sum[:16])
	val, err := json.Marshal(flvUse{Client: client, ExpiresAt: exp})
	if err != nil {
		return false, "", err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(key)}, Then: []store.Op{store.Put(key, val)}})
	if err != nil {
		return false, "", err
	}
	if resp.Succeeded {
		return true, "", nil
	}
	if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
		return false, "", err
	}
	kv, _, err := store.Get(ctx, s.Store, key, store.Local)
	if err != nil || kv == nil {
		return false, "the playback ticket is being used concurrently", err
	}
	use, err := store.Decode[flvUse](kv)
	if err != nil {
		return false, "", err
	}
	if use.Client != client {
		return false, "the playback ticket was used by another client; it admits one", nil
	}
	return true, "", nil
}

// sweepPlaybackUses drops the bindings of playback tickets that expired.
func (s *Service) sweepPlaybackUses(ctx context.Context) error {
	resp, err := s.Store.Range(ctx, flvUsePrefix, store.RangeOptions{End: store.PrefixEnd(flvUsePrefix), Consistency: store.Local})
	if err != nil {
		return err
	}
	now := s.now()
	var ops []store.Op
	for _, kv := range resp.KVs {
		if use, err := store.Decode[flvUse](kv); err != nil || now.After(use.ExpiresAt) {
			ops = append(ops, store.Delete(kv.Key))
		}
	}
	for len(ops) > 0 {
		n := min(len(ops), 64)
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops[:n]}); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// participant reads one participant, nil when there is none.
func (s *Service) participant(ctx context.Context, room RoomID, id ParticipantID) (*Participant, error) {
	if _, err := uuid.Parse(string(id)); err != nil {
		return nil, nil
	}
	kv, _, err := store.Get(ctx, s.Store, participantKey(room, id), store.Local)
	if err != nil || kv == nil {
		return nil, err
	}
	p, err := store.Decode[Participant](kv)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
