package playback

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Leases on recorded resources (issue 17). A recording-file lease plays
// one file on its media server's recorded-playback route; its ticket is
// bound to the reserved stream engineapi.RecordPlaybackVhost/App/<fileId>,
// which only that route asks on_play about.

// ResourceCheck says whether a recorded resource may play now (a file
// soft- or hard-deleted may not); reason says why not. The recording
// package provides it.
type ResourceCheck func(ctx context.Context, kind ResourceKind, resourceID string) (ok bool, reason string, err error)

// RecordingLease names the recorded resource a lease plays: a file, or a
// cut/merge output (Kind; a file when empty), by its id.
type RecordingLease struct {
	Kind          ResourceKind
	FileID        string
	MediaServerID string
}

// recordProtocols are what a recording lease covers: the file (with HTTP
// Range, or time-addressed) over http-fmp4, and its HLS VOD playlist,
// whose segments are byte ranges of the same file. The engine asks on_play
// about both as http-fmp4 (the playlist's segments are requests of the
// file), so a lease always covers both.
var recordProtocols = []Protocol{ProtoFMP4, ProtoHLS}

// CreateRecordingLease leases one recorded file to the calling token; it
// needs recordings.play and follows the live lease's rules otherwise
// (sliding rounds, renewals keep the URL, the token's state is rechecked at
// each play, and ResourceCheck refuses a deleted file).
func (s *Service) CreateRecordingLease(ctx context.Context, c Caller, r RecordingLease, req LeaseRequest) (*Lease, []Source, error) {
	for _, p := range req.Protocols {
		if pr := Protocol(strings.ToLower(strings.TrimSpace(p))); pr != ProtoFMP4 && pr != ProtoHLS {
			return nil, nil, fmt.Errorf("%w: a recording plays over http-fmp4 (the file with HTTP Range, or from a time with start=) and hls (VOD) only",
				ErrInvalid)
		}
	}
	req.Protocols = nil
	kind := r.Kind
	if kind == "" {
		kind = KindRecordingFile
	}
	l, srcs, err := s.createLease(ctx, c, r.FileID, req, func() (StreamLocation, error) {
		return StreamLocation{MediaServerID: r.MediaServerID, Vhost: engineapi.RecordPlaybackVhost, App: engineapi.RecordPlaybackApp, Stream: r.FileID,
			Online: true}, nil
	}, kind)
	return l, srcs, err
}

// isRecorded reports whether a lease or a play request is for a recorded
// resource (its reserved vhost).
func isRecorded(vhost string) bool { return vhost == engineapi.RecordPlaybackVhost }

// recordedSources are a recording lease's URLs on its media server.
func (s *Service) recordedSources(ctx context.Context, mediaServerID, fileID, ticket string) ([]Source, error) {
	base, err := s.Media.BaseURL(ctx, mediaServerID)
	if err != nil {
		return nil, err
	}
	u := strings.TrimRight(base, "/") + engineapi.RecordPlaybackPath + url.PathEscape(fileID)
	q := "?" + url.Values{TicketParam: {ticket}}.Encode()
	const same = " The URL stays the same while the lease is renewed; deleting the file makes it unusable."
	return []Source{{Protocol: ProtoFMP4, URL: u + ".mp4" + q, ContentType: "video/mp4", BrowserNative: true,
		Hint: "The recorded file as it is (fragmented MP4): browsers play and seek it in a <video> element with HTTP Range requests; " +
			"add &start=<seconds>[&duration=<seconds>] for a stream that begins at the keyframe before that time." + same},
		{Protocol: ProtoHLS, URL: u + ".m3u8" + q, ContentType: "application/vnd.apple.mpegurl", BrowserNative: true,
			Hint: "HLS VOD of the same file (fMP4 segments from keyframe to keyframe, as byte ranges of the file): Safari and iOS play it " +
				"natively, other browsers with hls.js." + same}}, nil
}
