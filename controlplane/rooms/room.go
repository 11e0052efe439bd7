package rooms

import (
	"time"
)

// RoomID and ParticipantID are UUIDv7 ids.
type (
	RoomID        string
	ParticipantID string
)

// Room states.
const (
	RoomOpen   = "Open"
	RoomClosed = "Closed"
)

// Participant states: Waiting is the contract's admission state (held
// until the host admits); Left and TimedOut are final.
const (
	ParticipantAdmitted = "Admitted"
	ParticipantWaiting  = "Waiting"
	ParticipantLeft     = "Left"
	ParticipantTimedOut = "TimedOut"
)

// Roles and capabilities of access tickets (contract B).
const (
	RoleHost   = "host"
	RoleMember = "member"
	RoleViewer = "viewer"

	CapCameraPublish     = "camera.publish"
	CapMicrophonePublish = "microphone.publish"
	CapSubscribe         = "publications.subscribe"
	CapChatSend          = "chat.send"
)

// Room is one meeting room.
type Room struct {
	RoomID        RoomID     `json:"roomId"`
	Name          string     `json:"name"`
	RoomType      string     `json:"roomType"`
	MediaServerID string     `json:"mediaServerId"`
	Status        string     `json:"status"`
	WaitingRoom   bool       `json:"waitingRoom"`
	ScheduledFrom *time.Time `json:"scheduledStartAtUtc,omitempty"`
	ScheduledTo   *time.Time `json:"scheduledEndAtUtc,omitempty"`
	// OwnerTokenID is the API token that created the room; only it (and
	// its administrators) manage the room.
	OwnerTokenID string `json:"ownerTokenId"`
	// RequestHash identifies the creating request, so a retry with the same
	// idempotencyKey and body gets this room and another body a conflict.
	RequestHash string    `json:"requestHash"`
	CreatedAt   time.Time `json:"createdAt"`
	// Sequence numbers the room's events.
	Sequence int64 `json:"sequence"`
	// LastActiveAt is the last time a participant joined or ended; the
	// leader closes an open room nobody has been in for EmptyRoomTimeout
	// since.
	LastActiveAt time.Time  `json:"lastActiveAt"`
	ClosedAt     *time.Time `json:"closedAt,omitempty"`
	// RecordingEnabled is the recording policy: whether a recording may
	// be started (allowing does not start one).
	RecordingEnabled bool `json:"recordingEnabled"`
	// CurrentRecordingID is the running continuous recording, if any.
	CurrentRecordingID string `json:"currentRecordingId,omitempty"`
}

// CreateRequest is contract B's CreateRtcRoomRequest.
type CreateRequest struct {
	Name          string
	RoomType      string
	MediaServerID string
	WaitingRoom   bool
	ScheduledFrom *time.Time
	ScheduledTo   *time.Time
	// IdempotencyKey makes a retried creation return the first room.
	IdempotencyKey string
}

// TicketRequest is the body of an access-ticket request.
type TicketRequest struct {
	SubjectIssuer     string
	SubjectID         string
	DisplayName       string
	Role              string
	Capabilities      []string
	ExpiresInMinutes  int
	BypassWaitingRoom bool
}

// accessTicket is what the store keeps of a ticket: never the ticket.
type accessTicket struct {
	RoomID            RoomID    `json:"roomId"`
	SubjectIssuer     string    `json:"subjectIssuer"`
	SubjectID         string    `json:"subjectId"`
	DisplayName       string    `json:"displayName"`
	Role              string    `json:"role"`
	Capabilities      []string  `json:"capabilities"`
	BypassWaitingRoom bool      `json:"bypassWaitingRoom"`
	IssuedByTokenID   string    `json:"issuedByTokenId"`
	ExpiresAt         time.Time `json:"expiresAt"`
}

// Participant is one admitted (or waiting) device session in a room.
type Participant struct {
	ParticipantID ParticipantID `json:"participantId"`
	RoomID        RoomID        `json:"roomId"`
	SubjectIssuer string        `json:"subjectIssuer"`
	SubjectID     string        `json:"subjectId"`
	DisplayName   string        `json:"displayName"`
	Role          string        `json:"role"`
	Capabilities  []string      `json:"capabilities"`
	State         string        `json:"state"`
	// TokenVersion counts the participant token's rotations; only the
	// newest token is valid.
	TokenVersion int    `json:"tokenVersion"`
	TokenHash    string `json:"tokenHash"`
	Platform     string `json:"platform,omitempty"`
	// ClientVersion is what the device reported at join.
	ClientVersion   string    `json:"clientVersion,omitempty"`
	JoinedAt        time.Time `json:"joinedAt"`
	LastHeartbeatAt time.Time `json:"lastHeartbeatAt"`
}

// Active reports whether the participant still holds the room.
func (p *Participant) Active() bool {
	return p.State == ParticipantAdmitted || p.State == ParticipantWaiting
}

// JoinRequest is a device's join.
type JoinRequest struct {
	AccessTicket  string
	DisplayName   string
	Platform      string
	ClientVersion string
}

// Joined is the answer of a join: the participant and its token, shown
// once.
type Joined struct {
	Participant Participant
	Token       string
}

// Publication states: Pending until its WHIP offer is answered, Active
// while it carries media, Stopped when released (by DELETE, leave, timeout
// or the room closing) and Failed when the media server could not take it.
const (
	PublicationPending = "Pending"
	PublicationActive  = "Active"
	PublicationStopped = "Stopped"
	PublicationFailed  = "Failed"
)

// Media kinds of a publication.
const (
	KindAudio = "audio"
	KindVideo = "video"
)

// Publication is one participant's WHIP publication into the room's SFU.
type Publication struct {
	PublicationID string        `json:"publicationId"`
	RoomID        RoomID        `json:"roomId"`
	ParticipantID ParticipantID `json:"participantId"`
	// Source is camera or screen.
	Source string `json:"source"`
	// MediaKinds are what the participant may send, after the role's
	// capabilities filtered the request.
	MediaKinds []string `json:"mediaKinds"`
	State      string   `json:"state"`
	// EngineSession is the media server's session id of the WHIP
	// resource while Active.
	EngineSession string    `json:"engineSession,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// Subscription states.
const (
	SubscriptionPending = "Pending"
	SubscriptionActive  = "Active"
	SubscriptionEnded   = "Ended"
)

// Subscription binds one viewing device to one publication; its WHEP
// offer opens the media session.
type Subscription struct {
	SubscriptionID string        `json:"subscriptionId"`
	RoomID         RoomID        `json:"roomId"`
	ParticipantID  ParticipantID `json:"participantId"`
	PublicationID  string        `json:"publicationId"`
	State          string        `json:"state"`
	EngineSession  string        `json:"engineSession,omitempty"`
	CreatedAt      time.Time     `json:"createdAt"`
}
