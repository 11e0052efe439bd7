package rooms

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Attachments are documents the platform makes of a meeting from what is
// public in it, never from what a participant said or typed to someone:
// the room keeps no private (or public) chat, and an attachment holds ids
// and offsets only, no name, subject or URL. The one there is:
//
//   - timeline (timeline.json): every track's periods with media and the
//     gaps between them (muted or disconnected time) as offsets from the
//     recording's origin, and the composites' states.
//
// Attachments open with view (/content, shown inline) or download
// (/download, as an attachment), and come with the package.

// AttachmentTimeline is the timeline attachment's id.
const AttachmentTimeline = "timeline"

// ErrAttachmentNotFound is an attachment the recording does not have
// (404).
var ErrAttachmentNotFound = fault.New(fault.NotFound, "not_found", "rooms: no such attachment")

// Attachment is one document of a recording.
type Attachment struct {
	AttachmentID string
	Name         string
	ContentType  string
	Body         []byte
}

// Attachments lists the attachments of a manifest.
func Attachments(m *Manifest) ([]Attachment, error) {
	tl, err := timeline(m)
	if err != nil {
		return nil, err
	}
	return []Attachment{{AttachmentID: AttachmentTimeline, Name: "timeline.json", ContentType: "application/json", Body: tl}}, nil
}

type timelineDoc struct {
	RecordingID string          `json:"recordingId"`
	OriginAtUTC time.Time       `json:"originAtUtc"`
	DurationMs  int64           `json:"durationMilliseconds"`
	Tracks      []timelineTrack `json:"tracks"`
	Composites  []timelineComp  `json:"composites"`
}

type timelineTrack struct {
	ParticipantID   ParticipantID `json:"participantId"`
	DeviceSessionID string        `json:"deviceSessionId"`
	MediaKind       string        `json:"mediaKind"`
	Codec           string        `json:"codec"`
	Media           [][2]int64    `json:"mediaMilliseconds"`
	Gaps            [][2]int64    `json:"gapMilliseconds"`
}

type timelineComp struct {
	CompositeID   string        `json:"compositeId"`
	Kind          string        `json:"kind"`
	ParticipantID ParticipantID `json:"participantId,omitempty"`
	State         string        `json:"state"`
}

// timeline is the timeline attachment: a gap is time within the
// recording that a track has no file for.
func timeline(m *Manifest) ([]byte, error) {
	doc := timelineDoc{RecordingID: m.Recording.RecordingID, OriginAtUTC: m.Recording.OriginAt, DurationMs: m.DurationMs, Tracks: []timelineTrack{},
		Composites: []timelineComp{}}
	for _, tr := range m.Tracks {
		t := timelineTrack{ParticipantID: tr.ParticipantID, DeviceSessionID: tr.DeviceSessionID, MediaKind: tr.MediaKind, Codec: tr.Codec,
			Media: [][2]int64{}, Gaps: [][2]int64{}}
		var end int64
		for i, f := range tr.Files {
			from, to := max(f.OffsetMs, 0), min(f.OffsetMs+f.DurationMs, m.DurationMs)
			if to <= from {
				continue
			}
			if i > 0 && from > end {
				t.Gaps = append(t.Gaps, [2]int64{end, from})
			}
			t.Media = append(t.Media, [2]int64{from, to})
			end = max(end, to)
		}
		doc.Tracks = append(doc.Tracks, t)
	}
	for _, c := range m.Composites {
		doc.Composites = append(doc.Composites, timelineComp{CompositeID: c.CompositeID, Kind: c.Kind, ParticipantID: c.ParticipantID, State: c.State})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// RecordingAttachment answers one attachment of a recording to an archive
// ticket holding action (view for its content, download for the file).
func (s *Service) RecordingAttachment(ctx context.Context, id RoomID, ticket, recordingID, attachmentID, action string) (*Attachment, error) {
	if _, err := s.checkArchive(ctx, id, ticket, action); err != nil {
		return nil, err
	}
	m, err := s.manifest(ctx, id, recordingID, 0)
	if err != nil {
		return nil, err
	}
	all, err := Attachments(m)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].AttachmentID == attachmentID {
			return &all[i], nil
		}
	}
	return nil, ErrAttachmentNotFound
}

// PackageFile is one media file of a recording's package.
type PackageFile struct {
	// Name is its path in the ZIP.
	Name string
	URL  string
}

// Package is what a recording's package holds: its manifest, its
// attachments and where each media file (the original track files, then
// the Available composites) is read from.
type Package struct {
	Manifest    *Manifest
	Attachments []Attachment
	Files       []PackageFile
}

// RecordingPackage assembles a recording's package for an archive ticket
// with download; while the recording runs or stops its files are not
// all sealed and there is none.
func (s *Service) RecordingPackage(ctx context.Context, id RoomID, ticket, recordingID string) (*Package, error) {
	r, err := s.checkArchive(ctx, id, ticket, ActionDownload)
	if err != nil {
		return nil, err
	}
	m, err := s.manifest(ctx, id, recordingID, 0)
	if err != nil {
		return nil, err
	}
	if m.Recording.State != RecordingStopped {
		return nil, fmt.Errorf("%w: the package is made once the recording Stopped", ErrRecordingNotReady)
	}
	p := &Package{Manifest: m}
	if p.Attachments, err = Attachments(m); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, tr := range m.Tracks {
		for _, f := range tr.Files {
			if seen[f.FileID] || s.Archive == nil {
				continue // a file holding audio and video is in both tracks
			}
			seen[f.FileID] = true
			u, err := s.Archive.FileURL(ctx, f.FileID, ActionDownload)
			if err != nil {
				return nil, err
			}
			p.Files = append(p.Files, PackageFile{Name: "tracks/" + tr.DeviceSessionID + "/" + f.FileID + ".mp4", URL: u})
		}
	}
	for _, c := range m.Composites {
		if c.State != CompositeAvailable || s.Composer == nil {
			continue
		}
		u, err := s.Composer.CompositeURL(ctx, r.MediaServerID, c.CompositeID, ActionDownload)
		if err != nil {
			return nil, err
		}
		name := "composites/meeting.mp4"
		if c.Kind == CompositeMember {
			name = "composites/member-" + string(c.ParticipantID) + ".mp4"
		}
		p.Files = append(p.Files, PackageFile{Name: name, URL: u})
	}
	return p, nil
}

// SessionManifest is the legacy post-meeting manifest: the manifest of
// the room's latest recording, for an admitted participant. It names
// files; reading one still takes an archive ticket.
func (s *Service) SessionManifest(ctx context.Context, id RoomID, token string) (*Manifest, error) {
	if _, _, err := s.admitted(ctx, id, token); err != nil {
		return nil, err
	}
	prefix := recordingsPrefix + string(id) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return nil, err
	}
	if len(resp.KVs) == 0 {
		return nil, fmt.Errorf("%w: the room has no recording", ErrRecordingNotFound)
	}
	// Recording ids are UUIDv7: the last key is the latest.
	rec, err := store.Decode[Recording](resp.KVs[len(resp.KVs)-1])
	if err != nil {
		return nil, err
	}
	return s.manifest(ctx, id, rec.RecordingID, 0)
}

// RecordingRunsWithTicket pages a room's recordings, newest first, for
// an archive ticket of that room with view.
func (s *Service) RecordingRunsWithTicket(ctx context.Context, id RoomID, ticket string, page, pageSize int) ([]Recording, int64, error) {
	if _, err := s.checkArchive(ctx, id, ticket, ActionView); err != nil {
		return nil, 0, err
	}
	return s.listRecordings(ctx, []query.Cond{query.Eq("room_id", string(id))}, RecordingFilter{Page: page, PageSize: pageSize})
}
