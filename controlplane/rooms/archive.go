package rooms

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Archive actions and the permission each needs of the ticket's issuer.
const (
	ActionView     = "view"
	ActionPlay     = "play"
	ActionDownload = "download"
)

var actionPermission = map[string]string{ActionView: "rtc.recordings.view", ActionPlay: "rtc.recordings.play",
	ActionDownload: "rtc.recordings.download"}

// Archive ticket lifetimes (contract B: 30-600 s, default 120).
const (
	DefaultArchiveSeconds = 120
	minArchiveSeconds     = 30
	maxArchiveSeconds     = 600
)

// ErrArchiveTicketInvalid is an archive ticket that is malformed,
// expired, of another room, without the action asked for, or whose
// issuer lost its validity, its permission or the room (401).
var ErrArchiveTicketInvalid = fault.New(fault.Unauthenticated, "archive_ticket_invalid", "rooms: the archive ticket is not valid for this")

// Issuer answers whether the credential that issued an archive ticket
// still holds a permission now (checked at every use of the ticket).
type Issuer func(ctx context.Context, credentialID, permission string) (bool, error)

// TrackFile is one recorded file of a room stream.
type TrackFile struct {
	FileID     string
	Start      time.Time
	DurationMs int64
	Codecs     []string
}

// Archive reads the files recorded of a room stream within a time range,
// and answers where one file's bytes are read from for an action (play or
// download).
type Archive interface {
	StreamFiles(ctx context.Context, mediaServerID, stream string, from, to time.Time) ([]TrackFile, error)
	FileURL(ctx context.Context, fileID, action string) (string, error)
}

// ArchiveTicket is an issued ticket, shown once.
type ArchiveTicket struct {
	Token     string
	RoomID    RoomID
	Actions   []string
	ExpiresAt time.Time
}

// IssueArchiveTicket makes a short-lived ticket for a room's recordings.
// The actions default to view and play; play and download add view; the
// issuer must hold each action's permission (has answers for the caller)
// and own the room (a super administrator may issue for any room).
func (s *Service) IssueArchiveTicket(ctx context.Context, c Caller, has func(string) bool, id RoomID, actions []string, lifetime int) (*ArchiveTicket,
	error) {
	r, _, err := s.room(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.OwnerTokenID != c.TokenID && !c.Super {
		return nil, ErrNotFound
	}
	if len(actions) == 0 {
		actions = []string{ActionView, ActionPlay}
	}
	set := []string{ActionView}
	for _, a := range actions {
		if _, ok := actionPermission[a]; !ok {
			return nil, fmt.Errorf("%w: actions are view, play and download", ErrInvalid)
		}
		if !slices.Contains(set, a) {
			set = append(set, a)
		}
	}
	for _, a := range set {
		if !has(actionPermission[a]) {
			return nil, fmt.Errorf("%w: %s needs %s, which the issuer lacks", ErrForbidden, a, actionPermission[a])
		}
	}
	if lifetime == 0 {
		lifetime = DefaultArchiveSeconds
	}
	if lifetime < minArchiveSeconds || lifetime > maxArchiveSeconds {
		return nil, fmt.Errorf("%w: lifetimeSeconds is %d-%d", ErrInvalid, minArchiveSeconds, maxArchiveSeconds)
	}
	exp := s.now().Add(time.Duration(lifetime) * time.Second).Truncate(time.Second)
	return &ArchiveTicket{Token: s.archiveToken(id, c.TokenID, set, exp), RoomID: id, Actions: set, ExpiresAt: exp}, nil
}

// archiveToken is "rar.<room>.<actions>.<expiry>.<issuer>.<mac>", the
// issuer base64url; nothing of it is stored.
func (s *Service) archiveToken(id RoomID, issuer string, actions []string, exp time.Time) string {
	body := strings.Join([]string{string(id), strings.Join(actions, "+"), strconv.FormatInt(exp.Unix(), 10), b64.EncodeToString([]byte(issuer))}, ".")
	return "rar." + body + "." + b64.EncodeToString(archiveMAC(s.MACKeys[0], body))
}

func archiveMAC(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("rtc-archive-ticket|" + body))
	return m.Sum(nil)[:16]
}

// parsedArchiveTicket is an archive ticket whose MAC matched.
type parsedArchiveTicket struct {
	room    RoomID
	actions []string
	exp     time.Time
	issuer  string
}

func (s *Service) parseArchiveTicket(t string) (parsedArchiveTicket, bool) {
	if len(t) > 512 {
		return parsedArchiveTicket{}, false
	}
	rest, ok := strings.CutPrefix(t, "rar.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 {
		return parsedArchiveTicket{}, false
	}
	body, macText := rest[:i], rest[i+1:]
	mac, err := b64.DecodeString(macText)
	if err != nil || len(mac) != 16 {
		return parsedArchiveTicket{}, false
	}
	valid := false
	for _, k := range s.MACKeys {
		valid = valid || hmac.Equal(mac, archiveMAC(k, body))
	}
	parts := strings.Split(body, ".")
	if !valid || len(parts) != 4 {
		return parsedArchiveTicket{}, false
	}
	unix, err := strconv.ParseInt(parts[2], 10, 64)
	issuer, ierr := b64.DecodeString(parts[3])
	if err != nil || ierr != nil {
		return parsedArchiveTicket{}, false
	}
	return parsedArchiveTicket{room: RoomID(parts[0]), actions: strings.Split(parts[1], "+"), exp: time.Unix(unix, 0), issuer: string(issuer)}, true
}

// checkArchive admits an archive ticket for one action on a room: its MAC,
// room, expiry and action, and then its issuer as it is now (valid, still
// holding the action's permission, still the room's owner or a super
// administrator). Anything else, a participant token among them, fails.
func (s *Service) checkArchive(ctx context.Context, id RoomID, ticket, action string) (*Room, error) {
	t, ok := s.parseArchiveTicket(ticket)
	if !ok || t.room != id || !s.now().Before(t.exp) || !slices.Contains(t.actions, action) {
		return nil, ErrArchiveTicketInvalid
	}
	if s.Issuer == nil {
		return nil, ErrArchiveTicketInvalid
	}
	held, err := s.Issuer(ctx, t.issuer, actionPermission[action])
	if err != nil {
		return nil, err
	}
	if !held {
		return nil, fmt.Errorf("%w: the issuer no longer holds %s", ErrArchiveTicketInvalid, actionPermission[action])
	}
	r, _, err := s.room(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.OwnerTokenID != t.issuer {
		super, err := s.Issuer(ctx, t.issuer, "*")
		if err != nil {
			return nil, err
		}
		if !super {
			return nil, ErrArchiveTicketInvalid
		}
	}
	return r, nil
}

// ManifestTrack is one track of a recording: one participant's device
// session (publication) and one media kind, with its files' offsets from
// the recording's origin.
type ManifestTrack struct {
	ParticipantID   ParticipantID
	DeviceSessionID string
	MediaKind       string
	Codec           string
	Files           []ManifestFile
}

// ManifestFile is one file of a track.
type ManifestFile struct {
	FileID     string
	OffsetMs   int64
	DurationMs int64
}

// Manifest is a recording's manifest (contract B).
type Manifest struct {
	Recording  *Recording
	DurationMs int64
	Tracks     []ManifestTrack
	// Composites are its member copies and full-meeting MP4, Exports
	// its full exports.
	Composites []Composite
	Exports    []Export
	// NextSequence continues the public events after afterSequence; the
	// platform keeps no public (chat, whiteboard, control, speech)
	// events yet, so there are none.
	NextSequence int64
}

// RecordingManifest answers a recording's manifest to an archive ticket
// with view.
func (s *Service) RecordingManifest(ctx context.Context, id RoomID, ticket, recordingID string, afterSequence int64) (*Manifest, error) {
	if _, err := s.checkArchive(ctx, id, ticket, ActionView); err != nil {
		return nil, err
	}
	return s.manifest(ctx, id, recordingID, afterSequence)
}

// manifest is a recording's manifest, its ticket checked.
func (s *Service) manifest(ctx context.Context, id RoomID, recordingID string, afterSequence int64) (*Manifest, error) {
	r, _, err := s.room(ctx, id)
	if err != nil {
		return nil, err
	}
	rec, err := s.recording(ctx, id, recordingID)
	if err != nil {
		return nil, err
	}
	end := s.now()
	if rec.StoppedAt != nil {
		end = *rec.StoppedAt
	}
	m := &Manifest{Recording: rec, DurationMs: end.Sub(rec.OriginAt).Milliseconds(), Tracks: []ManifestTrack{}, NextSequence: afterSequence}
	byPub, err := s.recordingFiles(ctx, r, rec)
	if err != nil {
		return nil, err
	}
	if m.Composites, err = s.composites(ctx, id, recordingID); err != nil {
		return nil, err
	}
	if m.Exports, err = s.recordingExports(ctx, id, recordingID); err != nil {
		return nil, err
	}
	for _, pubID := range rec.Publications {
		pub, _, err := s.publication(ctx, id, pubID)
		if err != nil {
			return nil, err
		}
		files := byPub[pubID]
		byKind := map[string]*ManifestTrack{}
		for _, f := range files {
			for _, codec := range f.Codecs {
				kind := KindAudio
				if codec == "H264" || codec == "H265" || codec == "VP8" {
					kind = KindVideo
				}
				tr := byKind[kind]
				if tr == nil {
					tr = &ManifestTrack{ParticipantID: pub.ParticipantID, DeviceSessionID: pubID, MediaKind: kind, Codec: codec}
					byKind[kind] = tr
				}
				tr.Files = append(tr.Files, ManifestFile{FileID: f.FileID, OffsetMs: f.Start.Sub(rec.OriginAt).Milliseconds(), DurationMs: f.DurationMs})
			}
		}
		for _, kind := range []string{KindAudio, KindVideo} {
			if tr := byKind[kind]; tr != nil {
				m.Tracks = append(m.Tracks, *tr)
			}
		}
	}
	return m, nil
}
