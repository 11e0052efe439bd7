package playback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Media links are contract B's ThirdPartyMediaLink: one URL that plays or
// downloads one recorded resource on its media server, for one client,
// until it expires. Recorded files are read with HTTP Range (a <video>
// element seeks, a download resumes), so "single use" cannot mean one
// request: the first request binds the link to its client's address and
// later requests from elsewhere are refused. The link's ticket is bound by
// its MAC to the resource and to the action (the engine asks on_play with
// the reserved app of playback or of download), so a playback link never
// downloads nor a download link plays.

// linksPrefix holds one record per media link, keyed by link id.
const linksPrefix = "/playback/links/"

// Media link actions.
const (
	ActionPlay     = "play"
	ActionDownload = "download"
)

// actionPermission is the permission each action needs, at creation and
// at every request.
var actionPermission = map[string]string{ActionPlay: "recordings.play", ActionDownload: "recordings.download"}

// MediaLink is the record behind one media link.
type MediaLink struct {
	LinkID        string       `json:"linkId"`
	ResourceKind  ResourceKind `json:"resourceKind"`
	ResourceID    string       `json:"resourceId"`
	MediaServerID string       `json:"mediaServerId"`
	Action        string       `json:"action"`
	TokenID       string       `json:"tokenId"`
	Permission    string       `json:"permission"`
	CreatedAt     time.Time    `json:"createdAt"`
	ExpiresAt     time.Time    `json:"expiresAt"`
	// Client is the address (host) of the first request; empty until the
	// link is used.
	Client string     `json:"client,omitempty"`
	UsedAt *time.Time `json:"usedAt,omitempty"`
}

// MediaLinkRequest asks for a link to one recorded resource.
type MediaLinkRequest struct {
	Kind          ResourceKind
	ResourceID    string
	MediaServerID string
	Action        string
	// LifetimeSeconds defaults to DefaultLinkSeconds.
	LifetimeSeconds *int
}

// IssuedLink is ThirdPartyMediaLink.
type IssuedLink struct {
	ResourceKind  ResourceKind
	ResourceID    string
	Action        string
	URL           string
	ExpiresAt     time.Time
	SupportsRange bool
}

// recordedStream is the reserved stream a recorded resource's requests
// ask on_play about, by action.
func recordedStream(kind ResourceKind, id, action string) (vhost, app, stream string, err error) {
	if kind != KindRecordingFile && kind != KindCutMergeOutput {
		return "", "", "", fmt.Errorf("%w: resource kind %s has no media links", ErrInvalid, kind)
	}
	switch action {
	case ActionPlay:
		return engineapi.RecordPlaybackVhost, engineapi.RecordPlaybackApp, id, nil
	case ActionDownload:
		return engineapi.RecordPlaybackVhost, engineapi.RecordDownloadApp, id, nil
	}
	return "", "", "", fmt.Errorf("%w: action %q is not play or download", ErrInvalid, action)
}

// recordedURL is a recorded resource's URL on its media server.
func (s *Service) recordedURL(ctx context.Context, mediaServerID, id, action, ticket string) (string, error) {
	base, err := s.Media.BaseURL(ctx, mediaServerID)
	if err != nil {
		return "", err
	}
	q := url.Values{TicketParam: {ticket}}
	if action == ActionDownload {
		q.Set(engineapi.RecordDownloadParam, "1")
	}
	return strings.TrimRight(base, "/") + engineapi.RecordPlaybackPath + url.PathEscape(id) + ".mp4?" + q.Encode(), nil
}

// CreateMediaLink issues one media link to the caller, who must hold the
// action's permission; the caller (the recording package) has checked
// that the resource exists and may be played now.
func (s *Service) CreateMediaLink(ctx context.Context, c Caller, r MediaLinkRequest) (*IssuedLink, error) {
	vhost, app, stream, err := recordedStream(r.Kind, r.ResourceID, r.Action)
	if err != nil {
		return nil, err
	}
	perm := actionPermission[r.Action]
	if !s.Grants(c.Permissions, perm) {
		return nil, fmt.Errorf("%w: a %s link needs %s", ErrPermissionDenied, r.Action, perm)
	}
	secs := DefaultLinkSeconds
	if r.LifetimeSeconds != nil {
		secs = *r.LifetimeSeconds
	}
	maxSecs := s.MaxLinkSeconds
	if maxSecs <= 0 {
		maxSecs = 600
	}
	if secs < MinLinkSeconds || secs > maxSecs {
		return nil, fmt.Errorf("%w: lifetimeSeconds %d is outside %d-%d", ErrInvalid, secs, MinLinkSeconds, maxSecs)
	}
	now := s.now()
	exp := now.Add(time.Duration(secs) * time.Second)
	if c.ExpiresAt != nil && c.ExpiresAt.Before(exp) {
		exp = c.ExpiresAt.UTC()
		if !exp.After(now) {
			return nil, fmt.Errorf("%w: the API token has expired", ErrLeaseConflict)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	l := MediaLink{LinkID: id.String(), ResourceKind: r.Kind, ResourceID: r.ResourceID, MediaServerID: r.MediaServerID, Action: r.Action,
		TokenID: c.TokenID, Permission: perm, CreatedAt: now, ExpiresAt: exp}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	u, err := s.recordedURL(ctx, r.MediaServerID, r.ResourceID, r.Action, s.ticket(kindLink, l.LinkID, vhost, app, stream))
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(linksPrefix + l.LinkID)},
		Then: []store.Op{store.Put(linksPrefix+l.LinkID, b)}}); err != nil {
		return nil, err
	}
	return &IssuedLink{ResourceKind: r.Kind, ResourceID: r.ResourceID, Action: r.Action, URL: u, ExpiresAt: exp, SupportsRange: true}, nil
}

// readLink reads a link record, catching up with the leader once when it
// is missing (it may have been created through another control node).
func (s *Service) readLink(ctx context.Context, id string) (*MediaLink, int64, error) {
	for attempt := 0; ; attempt++ {
		kv, _, err := store.Get(ctx, s.Store, linksPrefix+id, store.Local)
		if err != nil {
			return nil, 0, err
		}
		if kv != nil {
			l, err := store.Decode[MediaLink](kv)
			return &l, kv.ModRevision, err
		}
		if attempt > 0 || s.Catchup == nil {
			return nil, 0, nil
		}
		if err := s.Catchup(ctx); err != nil {
			return nil, 0, err
		}
	}
}

// clientHost is the host of a request's remote address: a client's later
// Range requests come from other ports.
func clientHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// authorizeLink decides a request with a media link's ticket (whose MAC
// already matched the requested resource and action). Nothing is cached by
// the engine: each request is decided here, so a second client, a deleted
// file or a token that lost the permission is refused at once.
func (s *Service) authorizeLink(ctx context.Context, id string, r PlayRequest) (Decision, error) {
	client := clientHost(r.RemoteAddr)
	for range 3 {
		l, rev, err := s.readLink(ctx, id)
		if err != nil {
			return Decision{}, err
		}
		now := s.now()
		switch {
		case l == nil:
			return deny("no such link"), nil
		case !now.Before(l.ExpiresAt):
			return deny("the link expired"), nil
		case Protocol(r.Protocol) != ProtoFMP4:
			return deny("a media link is not for protocol " + r.Protocol), nil
		case r.MediaServerID != "" && l.MediaServerID != r.MediaServerID:
			return deny("the link is for another media server"), nil
		case l.Client != "" && l.Client != client:
			return deny("the link was used by another client; it admits one"), nil
		}
		if s.Resources != nil {
			ok, reason, err := s.Resources(ctx, l.ResourceKind, l.ResourceID)
			if err != nil {
				return Decision{}, err
			}
			if !ok {
				return deny(reason), nil
			}
		}
		ts, err := s.Tokens(ctx, l.TokenID)
		if err != nil {
			return Decision{}, err
		}
		if !ts.Valid || !s.Grants(ts.Permissions, l.Permission) {
			return deny("the credential that issued the link is no longer valid or lost " + l.Permission), nil
		}
		if l.Client != "" {
			return Decision{Allow: true}, nil
		}
		// The first request binds the link to its client; of two clients
		// racing for it one wins the compare, the other reads it again.
		l.Client, l.UsedAt = client, &now
		b, err := json.Marshal(l)
		if err != nil {
			return Decision{}, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(linksPrefix+id, rev)},
			Then: []store.Op{store.Put(linksPrefix+id, b)}})
		if err != nil && !errors.Is(err, store.ErrContended) {
			return Decision{}, err
		}
		if err == nil && resp.Succeeded {
			return Decision{Allow: true}, nil
		}
	}
	return deny("the link is being used concurrently"), nil
}

// systemTicketTTL bounds a system ticket's use after it was made, and
// systemTicketSkew the clock difference between the control node that made
// it and the one deciding.
const (
	systemTicketTTL  = 60 * time.Second
	systemTicketSkew = 10 * time.Second
)

// SystemRecordedURL is the URL a control node itself reads a recorded
// resource through, to answer GET /api/v2/recording/files/{fileId}/media
// and /download to a caller it authenticated: the caller may be connected
// to any control node, and only the owning engine has the bytes. Its
// ticket is stateless (nothing is written per request): a MAC over the
// resource, the action and a fresh UUIDv7, whose embedded time bounds it to
// systemTicketTTL. It never leaves the control plane.
func (s *Service) SystemRecordedURL(ctx context.Context, kind ResourceKind, resourceID, mediaServerID, action string) (string, error) {
	vhost, app, stream, err := recordedStream(kind, resourceID, action)
	if err != nil {
		return "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return s.recordedURL(ctx, mediaServerID, resourceID, action, s.ticket(kindSystem, id.String(), vhost, app, stream))
}

// authorizeSystem decides a request with a system ticket: fresh, and the
// resource still playable.
func (s *Service) authorizeSystem(ctx context.Context, id string, r PlayRequest, vhost string) (Decision, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 || !isRecorded(vhost) || Protocol(r.Protocol) != ProtoFMP4 {
		return deny("not a system ticket of a recorded resource"), nil
	}
	sec, nsec := u.Time().UnixTime()
	made, now := time.Unix(sec, nsec), s.now()
	if now.Sub(made) > systemTicketTTL || made.Sub(now) > systemTicketSkew {
		return deny("the system ticket expired"), nil
	}
	// The engine serves files and cut/merge outputs alike by id (UUIDs
	// both); the MAC bound the ticket to this id, so whichever it is must
	// be playable now.
	if s.Resources != nil {
		var reason string
		for _, kind := range []ResourceKind{KindRecordingFile, KindCutMergeOutput} {
			ok, why, err := s.Resources(ctx, kind, r.Stream)
			if err != nil {
				return Decision{}, err
			}
			if ok {
				return Decision{Allow: true}, nil
			}
			if reason == "" {
				reason = why
			}
		}
		return deny(reason), nil
	}
	return Decision{Allow: true}, nil
}
