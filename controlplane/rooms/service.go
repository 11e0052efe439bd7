package rooms

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Keys of the domain in the store.
const (
	roomsPrefix         = "/rtc/rooms/"
	publicationsPrefix  = "/rtc/publications/"
	subscriptionsPrefix = "/rtc/subscriptions/"
	idempotencyPrefix   = "/rtc/idempotency/"
	ticketsPrefix       = "/rtc/tickets/"
	participantsPrefix  = "/rtc/participants/"
	// readyPrefix marks the publications whose stream the engine reported
	// registered; a key apart from the publication so that the report
	// racing the WHIP answer never fails the publication's own write.
	readyPrefix = "/rtc/ready/"
)

// Limits (contract B leaves the ticket lifetime's maximum to us).
const (
	DefaultTicketMinutes = 10
	MaxTicketMinutes     = 24 * 60
	maxNameLength        = 128
)

// DefaultHeartbeatTimeout ends a participant whose device has sent no
// heartbeat for this long.
const DefaultHeartbeatTimeout = 30 * time.Second

// Service is the rooms domain.
type Service struct {
	Store store.Store
	// NodeID is the control node that proposes the events.
	NodeID string
	// Now is the clock (tests move it); time.Now when nil.
	Now func() time.Time
	// HeartbeatTimeout is DefaultHeartbeatTimeout when zero.
	HeartbeatTimeout time.Duration
	// EmptyRoomTimeout is DefaultEmptyRoomTimeout when zero.
	EmptyRoomTimeout time.Duration
	// ReadyTimeout is DefaultReadyTimeout when zero.
	ReadyTimeout time.Duration
	// MACKeys sign the tickets the engine gets for room streams (the
	// first signs; all verify, so a rotation keeps tickets in flight).
	MACKeys [][]byte
	// Media relays signalling to the room's media server.
	Media Media
	// Reader answers the room listing's index queries.
	Reader query.Reader
	// Recorder records the publications of rooms whose recording runs.
	Recorder Recorder
	// Archive reads the recorded files of room streams.
	Archive Archive
	// Issuer rechecks an archive ticket's issuer at every use.
	Issuer Issuer
	// Exporter cuts full exports of recordings.
	Exporter Exporter
	// Composer renders member copies and the full-meeting MP4.
	Composer Composer

	wakeOnce sync.Once
	wake     chan struct{}
}

// Caller is the API token calling a management operation.
type Caller struct {
	TokenID string
	// Super is a caller with super permission, who may set any room's
	// recording policy.
	Super bool
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// DefaultReadyTimeout fails an Active publication whose stream the engine
// has not registered this long after its WHIP answer: the engine gives a
// publisher 20 s to complete ICE and DTLS and then drops it without any
// stream report, so the leader's sweep is what notices.
const DefaultReadyTimeout = 30 * time.Second

func (s *Service) readyTimeout() time.Duration {
	if s.ReadyTimeout > 0 {
		return s.ReadyTimeout
	}
	return DefaultReadyTimeout
}

func (s *Service) heartbeatTimeout() time.Duration {
	if s.HeartbeatTimeout > 0 {
		return s.HeartbeatTimeout
	}
	return DefaultHeartbeatTimeout
}

// CreateRoom creates a room owned by the calling token. With an
// idempotencyKey, a retry of the same request returns the room the first
// one created (created false), and the key reused for another request is
// ErrIdempotencyConflict; the key and the room are written in one Txn that
// requires the key to be new, so two concurrent retries make one room.
func (s *Service) CreateRoom(ctx context.Context, c Caller, req CreateRequest) (room *Room, created bool, err error) {
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > maxNameLength {
		return nil, false, fmt.Errorf("%w: name is 1-%d characters", ErrInvalid, maxNameLength)
	}
	if req.RoomType == "" {
		req.RoomType = "meeting"
	}
	if req.ScheduledFrom != nil && req.ScheduledTo != nil && !req.ScheduledTo.After(*req.ScheduledFrom) {
		return nil, false, fmt.Errorf("%w: scheduledEndAtUtc is not after scheduledStartAtUtc", ErrInvalid)
	}
	if len(req.IdempotencyKey) > 128 {
		return nil, false, fmt.Errorf("%w: idempotencyKey is at most 128 characters", ErrInvalid)
	}
	reqHash := requestHash(req)
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, err
	}
	now := s.now()
	ms := req.MediaServerID
	if ms == "" && s.Media != nil {
		// Chosen now when there is a media server, so rtc.room.created
		// names it; otherwise at the first publication.
		if picked, err := s.Media.PickMediaServer(ctx); err == nil {
			ms = picked
		}
	}
	r := &Room{RoomID: RoomID(id.String()), Name: req.Name, RoomType: req.RoomType, MediaServerID: ms, Status: RoomOpen,
		WaitingRoom: req.WaitingRoom, ScheduledFrom: req.ScheduledFrom, ScheduledTo: req.ScheduledTo, OwnerTokenID: c.TokenID,
		RequestHash: reqHash, CreatedAt: now, LastActiveAt: now}
	val, err := json.Marshal(r)
	if err != nil {
		return nil, false, err
	}
	ev, err := s.roomCreatedEvent(r)
	if err != nil {
		return nil, false, err
	}
	txn := store.TxnRequest{Compares: []store.Compare{store.Absent(roomsPrefix + string(r.RoomID))},
		Then: []store.Op{store.Put(roomsPrefix+string(r.RoomID), val), ev}}
	var idemKey string
	if req.IdempotencyKey != "" {
		idemKey = idempotencyPrefix + c.TokenID + "/" + hashHex(req.IdempotencyKey)
		txn.Compares = append(txn.Compares, store.Absent(idemKey))
		txn.Then = append(txn.Then, store.Put(idemKey, []byte(r.RoomID)))
	}
	resp, err := s.Store.Txn(ctx, txn)
	if err != nil {
		return nil, false, err
	}
	if resp.Succeeded {
		return r, true, nil
	}
	if idemKey == "" {
		return nil, false, fmt.Errorf("rooms: room id %s taken", r.RoomID)
	}
	// The key was used first: that request's room, if it was this request.
	if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
		return nil, false, err
	}
	kv, _, err := store.Get(ctx, s.Store, idemKey, store.Local)
	if err != nil || kv == nil {
		return nil, false, fmt.Errorf("rooms: idempotency record vanished: %w", err)
	}
	first, _, err := s.room(ctx, RoomID(kv.Value))
	if err != nil {
		return nil, false, err
	}
	if first.RequestHash != reqHash {
		return nil, false, ErrIdempotencyConflict
	}
	return first, false, nil
}

// Room reads a room the caller owns.
func (s *Service) Room(ctx context.Context, c Caller, id RoomID) (*Room, error) {
	r, _, err := s.room(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.OwnerTokenID != c.TokenID {
		return nil, ErrNotFound
	}
	return r, nil
}

// changeRoom is store.UpdateRecord for one room: fn changes the room and
// says whether to write it (false keeps it as it is); an absent room is
// ErrNotFound. It answers the room as fn left it.
func (s *Service) changeRoom(ctx context.Context, id RoomID, fn func(r *Room) (write bool, err error)) (*Room, error) {
	if _, err := uuid.Parse(string(id)); err != nil {
		return nil, ErrNotFound
	}
	var out *Room
	_, err := store.UpdateRecord(ctx, s.Store, roomsPrefix+string(id), func(cur *Room) (*Room, []store.Op, []store.Compare, error) {
		if cur == nil {
			return nil, nil, nil, ErrNotFound
		}
		write, err := fn(cur)
		out = cur
		if err == nil && !write {
			err = errRoomUnchanged
		}
		return cur, nil, nil, err
	})
	if errors.Is(err, errRoomUnchanged) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errRoomUnchanged ends a changeRoom that has nothing to write.
var errRoomUnchanged = errors.New("rooms: room unchanged")

func (s *Service) room(ctx context.Context, id RoomID) (*Room, *store.KeyValue, error) {
	if _, err := uuid.Parse(string(id)); err != nil {
		return nil, nil, ErrNotFound
	}
	kv, _, err := store.Get(ctx, s.Store, roomsPrefix+string(id), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrNotFound
	}
	r, err := store.Decode[Room](kv)
	if err != nil {
		return nil, nil, err
	}
	return &r, kv, nil
}

// IssueTicket makes a single-use access ticket for one user of an open
// room the caller owns; the ticket is returned once and stored only as
// its hash. A viewer's publish capabilities are dropped: a viewer never
// publishes.
func (s *Service) IssueTicket(ctx context.Context, c Caller, id RoomID, req TicketRequest) (ticket string, expiresAt time.Time, err error) {
	r, err := s.Room(ctx, c, id)
	if err != nil {
		return "", time.Time{}, err
	}
	if r.Status != RoomOpen {
		return "", time.Time{}, ErrRoomClosed
	}
	if req.SubjectIssuer == "" || req.SubjectID == "" || len(req.SubjectIssuer) > 128 || len(req.SubjectID) > 128 {
		return "", time.Time{}, fmt.Errorf("%w: subjectIssuer and subjectId are 1-128 characters", ErrInvalid)
	}
	if len(req.DisplayName) > maxNameLength {
		return "", time.Time{}, fmt.Errorf("%w: displayName is at most %d characters", ErrInvalid, maxNameLength)
	}
	switch req.Role {
	case RoleHost, RoleMember, RoleViewer:
	case "":
		req.Role = RoleMember
	default:
		return "", time.Time{}, fmt.Errorf("%w: role %q is not host, member or viewer", ErrInvalid, req.Role)
	}
	caps := []string{}
	for _, cp := range req.Capabilities {
		switch cp {
		case CapCameraPublish, CapMicrophonePublish:
			if req.Role == RoleViewer {
				continue
			}
		case CapSubscribe, CapChatSend:
		default:
			return "", time.Time{}, fmt.Errorf("%w: capability %q is not one of camera.publish, microphone.publish, publications.subscribe, chat.send",
				ErrInvalid, cp)
		}
		if !slices.Contains(caps, cp) {
			caps = append(caps, cp)
		}
	}
	minutes := req.ExpiresInMinutes
	if minutes == 0 {
		minutes = DefaultTicketMinutes
	}
	if minutes < 1 || minutes > MaxTicketMinutes {
		return "", time.Time{}, fmt.Errorf("%w: expiresInMinutes is 1-%d", ErrInvalid, MaxTicketMinutes)
	}
	secret, err := randomSecret()
	if err != nil {
		return "", time.Time{}, err
	}
	ticket = "rat_" + secret
	expiresAt = s.now().Add(time.Duration(minutes) * time.Minute)
	t := accessTicket{RoomID: id, SubjectIssuer: req.SubjectIssuer, SubjectID: req.SubjectID, DisplayName: req.DisplayName, Role: req.Role,
		Capabilities: caps, BypassWaitingRoom: req.BypassWaitingRoom, IssuedByTokenID: c.TokenID, ExpiresAt: expiresAt}
	val, err := json.Marshal(t)
	if err != nil {
		return "", time.Time{}, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(ticketsPrefix+hashHex(ticket), val)}}); err != nil {
		return "", time.Time{}, err
	}
	return ticket, expiresAt, nil
}

// randomSecret is 32 random bytes, base64url.
func randomSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// requestHash identifies a creation request for idempotency.
func requestHash(req CreateRequest) string {
	req.IdempotencyKey = ""
	b, _ := json.Marshal(req)
	return hashHex(string(b))
}

// participantToken is "rtc." + participant id + "." + secret; the store
// keeps the secret's hash with the participant.
func participantToken(id ParticipantID, secret string) string {
	return "rtc." + string(id) + "." + secret
}

func parseParticipantToken(token string) (ParticipantID, string, bool) {
	rest, ok := strings.CutPrefix(token, "rtc.")
	if !ok {
		return "", "", false
	}
	id, secret, ok := strings.Cut(rest, ".")
	if !ok || secret == "" {
		return "", "", false
	}
	if _, err := uuid.Parse(id); err != nil {
		return "", "", false
	}
	return ParticipantID(id), secret, true
}

func sameHash(secret, stored string) bool {
	return subtle.ConstantTimeCompare([]byte(hashHex(secret)), []byte(stored)) == 1
}

// errRetry makes a read-modify-write try again after a concurrent change.
var errRetry = errors.New("rooms: retry")

// Timeout is how long a participant lives without a heartbeat.
func (s *Service) Timeout() time.Duration { return s.heartbeatTimeout() }
