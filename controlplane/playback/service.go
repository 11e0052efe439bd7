package playback

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/revcache"
)

// StreamLocation is where a channel's stream plays now.
type StreamLocation struct {
	ChannelID     string
	MediaServerID string
	Vhost         string
	App           string
	Stream        string
	// Online is true once media arrived (contract: only Online streams get
	// playback URLs).
	Online bool
}

// StreamLocator names a stream outside any channel, as the engines report
// it: a pushed stream, a pull proxy. An empty MediaServerID means the one
// media server where it is Online.
type StreamLocator struct {
	MediaServerID, Vhost, App, Stream string
}

// ResourceID is a stream lease's resourceId: the locator as a path,
// `{mediaServerId}/{vhost}/{app}/{streamId}`, each part path-escaped.
func (l StreamLocator) ResourceID() string {
	return url.PathEscape(l.MediaServerID) + "/" + url.PathEscape(l.Vhost) + "/" + url.PathEscape(l.App) + "/" + url.PathEscape(l.Stream)
}

// Streams finds a channel's stream (ErrNotFound when there is no channel)
// and a stream by its locator (ErrStreamNotReady when it is not Online).
type Streams interface {
	Locate(ctx context.Context, channelID string) (StreamLocation, error)
	LocateStream(ctx context.Context, l StreamLocator) (StreamLocation, error)
}

// MediaURLs gives the public base URLs (scheme://host:port) of a media
// server's HTTP media port and RTSP port, as players reach them.
type MediaURLs interface {
	BaseURL(ctx context.Context, mediaServerID string) (string, error)
	RTSPBaseURL(ctx context.Context, mediaServerID string) (string, error)
}

// TokenState is what the playback path needs to know of an API token now.
type TokenState struct {
	// Valid is false for an unknown, revoked, expired or not-yet-valid
	// token, or one whose owner was disabled or deleted.
	Valid bool
	// ExpiresAt is the token's expiry, if it has one.
	ExpiresAt *time.Time
	// Permissions are what the token may do now (its own, within its
	// owner's).
	Permissions []string
}

// Cutter ends the players of a lease on a media server (a node command to
// the server's agent, which kicks them through the engine's control API).
type Cutter interface {
	Cut(ctx context.Context, mediaServerID, leaseID string) error
}

// SessionCredential prefixes the TokenID of a grant a console session made
// (the console's live view): its state is the session's, not a token's.
const SessionCredential = "session:"

// Caller is the API token (or console session) asking.
type Caller struct {
	TokenID     string
	Permissions []string
	ExpiresAt   *time.Time
}

// Service issues and checks playback grants.
type Service struct {
	Store  store.Store
	Reader query.Reader
	// MACKeys sign tickets, primary first (from the cluster keyring).
	MACKeys [][]byte
	Streams Streams
	Media   MediaURLs
	Tokens  func(ctx context.Context, tokenID string) (TokenState, error)
	Grants  func(perms []string, p string) bool
	Cutter  Cutter
	// MaxLinkSeconds bounds one-time URL lifetimes (configuration).
	MaxLinkSeconds int
	// Revision is the revision of the latest change to a lease (the
	// store's area revision of LeasesPrefix); leases read for on_play are
	// cached while it has not moved. Nil: nothing is cached.
	Revision func() int64
	// TokensRevision moves whenever a token's state could have changed
	// (tokens, users, roles); the sweeper looks at every lease again when
	// it does. Nil: it looks at every tick.
	TokensRevision func() int64
	// Catchup is a linearizable barrier: a grant created through another
	// control node moments ago is looked up once more after it.
	Catchup func(ctx context.Context) error
	// Resources checks a recorded resource at each play (nil: none is
	// refused for its own state).
	Resources ResourceCheck
	// Codecs are the codecs of a stream's tracks as its media server last
	// reported them ("H264", "AAC", ...); a live source's hint then says
	// what its protocol leaves out of this stream. Nil: general hints only.
	Codecs func(ctx context.Context, mediaServerID, vhost, app, stream string) ([]string, error)
	Now    func() time.Time

	leases revcache.Cache[*Lease]
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) revision() int64 {
	if s.Revision == nil {
		return -1
	}
	return s.Revision()
}

// LeaseRequest is ThirdPartyPlaybackLeaseRequest.
type LeaseRequest struct {
	Protocols               []string
	LeaseSeconds            *int
	AbsoluteLifetimeSeconds *int
}

// CreateLiveLease leases a channel's live stream to the calling token.
func (s *Service) CreateLiveLease(ctx context.Context, c Caller, channelID string, req LeaseRequest) (*Lease, []Source, error) {
	return s.createLease(ctx, c, channelID, req, func() (StreamLocation, error) {
		loc, err := s.Streams.Locate(ctx, channelID)
		if err == nil && (!loc.Online || loc.MediaServerID == "") {
			err = fmt.Errorf("%w: channel %s; start it and poll its stream until Online", ErrStreamNotReady, channelID)
		}
		return loc, err
	}, KindLive)
}

// CreateStreamLease leases a stream named by its locator (a pushed stream,
// a pull proxy: one no channel owns, or any other) to the calling token,
// exactly as a channel's: the ticket binds the lease to the stream's
// vhost/app/stream on its media server.
func (s *Service) CreateStreamLease(ctx context.Context, c Caller, l StreamLocator, req LeaseRequest) (*Lease, []Source, error) {
	if l.App == "" || l.Stream == "" {
		return nil, nil, fmt.Errorf("%w: app and streamId are required", ErrInvalid)
	}
	if l.Vhost == "" {
		l.Vhost = DefaultVhost
	}
	return s.createLease(ctx, c, "", req, func() (StreamLocation, error) { return s.Streams.LocateStream(ctx, l) }, KindLive)
}

// CreateSessionLease leases a stream that belongs to a session of its own
// (a GB28181 playback session): resourceId is the session's id, and the
// lease ends when the session does (EndResourceLeases).
func (s *Service) CreateSessionLease(ctx context.Context, c Caller, kind ResourceKind, sessionID string, l StreamLocator, req LeaseRequest) (*Lease, []Source, error) {
	return s.createLease(ctx, c, sessionID, req, func() (StreamLocation, error) { return s.Streams.LocateStream(ctx, l) }, kind)
}

// EndResourceLeases revokes the Active leases of one resource on a media
// server (its session ended) and has their players cut.
func (s *Service) EndResourceLeases(ctx context.Context, kind ResourceKind, resourceID, mediaServerID, reason string) error {
	active, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name,
		Where: []query.Cond{query.Eq("state", StateActive), query.Eq("media_server_id", mediaServerID)}}, query.JSON[Lease])
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range active {
		if l.ResourceKind == kind && l.ResourceID == resourceID {
			errs = append(errs, s.end(ctx, l.LeaseID, StateRevoked, truncate(reason, 200)))
		}
	}
	return errors.Join(errs...)
}

// createLease checks the request, locates the Online stream and writes
// the lease; resourceID empty means the stream's locator.
func (s *Service) createLease(ctx context.Context, c Caller, resourceID string, req LeaseRequest, locate func() (StreamLocation, error),
	kind ResourceKind) (*Lease, []Source, error) {
	protos, err := normalizeProtocols(req.Protocols)
	if err != nil {
		return nil, nil, err
	}
	leaseSecs := DefaultLeaseSeconds
	if req.LeaseSeconds != nil {
		leaseSecs = *req.LeaseSeconds
	}
	if leaseSecs < MinLeaseSeconds || leaseSecs > MaxLeaseSeconds {
		return nil, nil, fmt.Errorf("%w: leaseSeconds %d is outside %d-%d", ErrInvalid, leaseSecs, MinLeaseSeconds, MaxLeaseSeconds)
	}
	now := s.now()
	absolute := now.Add(MaxAbsoluteSeconds * time.Second)
	if req.AbsoluteLifetimeSeconds != nil {
		a := *req.AbsoluteLifetimeSeconds
		if a < leaseSecs || a > MaxAbsoluteSeconds {
			return nil, nil, fmt.Errorf("%w: absoluteLifetimeSeconds %d must be between leaseSeconds (%d) and %d", ErrInvalid, a, leaseSecs, MaxAbsoluteSeconds)
		}
		absolute = now.Add(time.Duration(a) * time.Second)
	}
	// Never beyond the API token's own expiry.
	if c.ExpiresAt != nil && c.ExpiresAt.Before(absolute) {
		absolute = c.ExpiresAt.UTC()
		if !absolute.After(now) {
			return nil, nil, fmt.Errorf("%w: the API token has expired", ErrLeaseConflict)
		}
	}
	loc, err := locate()
	if err != nil {
		return nil, nil, err
	}
	if resourceID == "" {
		resourceID = StreamLocator{MediaServerID: loc.MediaServerID, Vhost: loc.Vhost, App: loc.App, Stream: loc.Stream}.ResourceID()
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, nil, err
	}
	perm := "streams.play"
	if kind.recorded() {
		protos, perm = recordProtocols, "recordings.play"
	}
	l := &Lease{LeaseID: id.String(), ResourceKind: kind, ResourceID: resourceID, MediaServerID: loc.MediaServerID,
		Vhost: loc.Vhost, App: loc.App, Stream: loc.Stream, Protocols: protos, TokenID: c.TokenID, Permission: perm,
		LeaseSeconds: leaseSecs, CreatedAt: now, AbsoluteExpiresAt: absolute, State: StateActive}
	l.round(now, leaseSecs)
	put, err := putLease(l)
	if err != nil {
		return nil, nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(LeasesPrefix + l.LeaseID)}, Then: []store.Op{put}}); err != nil {
		return nil, nil, err
	}
	srcs, err := s.leaseSources(ctx, l)
	return l, srcs, err
}

// round starts a new sliding round of secs at now, never past the
// absolute expiry; renewAfter is about 70% into it, with a little jitter
// so a fleet of players does not renew in lockstep.
func (l *Lease) round(now time.Time, secs int) {
	l.ExpiresAt = now.Add(time.Duration(secs) * time.Second)
	if l.ExpiresAt.After(l.AbsoluteExpiresAt) {
		l.ExpiresAt = l.AbsoluteExpiresAt
	}
	span := l.ExpiresAt.Sub(now)
	jitter := time.Duration(rand.Int64N(int64(span/20) + 1))
	l.RenewAfter = now.Add(time.Duration(float64(span)*renewAfterFraction) - jitter)
}

// owned reads a lease the caller created; any other caller gets
// ErrNotFound, so a lease id alone reveals nothing. The creating token
// that no longer holds the lease's permission gets ErrPermissionDenied:
// the documents' code for a missing permission, which a renewal cannot
// work around.
func (s *Service) owned(ctx context.Context, c Caller, id string) (*Lease, int64, error) {
	l, rev, err := s.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if l.TokenID != c.TokenID {
		return nil, 0, fmt.Errorf("%w: lease %q", ErrNotFound, id)
	}
	if !s.Grants(c.Permissions, l.Permission) {
		return nil, 0, fmt.Errorf("%w: the lease needs %s, which this API token no longer holds", ErrPermissionDenied, l.Permission)
	}
	return l, rev, nil
}

// ReadLease returns the caller's lease with its sources.
func (s *Service) ReadLease(ctx context.Context, c Caller, id string) (*Lease, []Source, error) {
	l, _, err := s.owned(ctx, c, id)
	if err != nil {
		return nil, nil, err
	}
	l.settle(s.now())
	srcs, err := s.leaseSources(ctx, l)
	return l, srcs, err
}

// settle shows a lease past its time as Expired even before the sweeper
// wrote it.
func (l *Lease) settle(now time.Time) {
	if l.State == StateActive && !l.Playable(now) {
		l.State = StateExpired
	}
}

func (s *Service) leaseSources(ctx context.Context, l *Lease) ([]Source, error) {
	if isRecorded(l.Vhost) {
		return s.recordedSources(ctx, l.MediaServerID, l.Stream, s.ticket(kindLease, l.LeaseID, l.Vhost, l.App, l.Stream))
	}
	return s.sources(ctx, kindLease, l.MediaServerID, l.Vhost, l.App, l.Stream, l.Protocols, func(Protocol) string {
		return s.ticket(kindLease, l.LeaseID, l.Vhost, l.App, l.Stream)
	})
}

// Renew starts a new sliding round; the URLs stay the same. An expired,
// revoked or exhausted lease cannot be revived.
func (s *Service) Renew(ctx context.Context, c Caller, id string, leaseSeconds *int) (*Lease, []Source, error) {
	if leaseSeconds != nil && (*leaseSeconds < MinLeaseSeconds || *leaseSeconds > MaxLeaseSeconds) {
		return nil, nil, fmt.Errorf("%w: leaseSeconds %d is outside %d-%d", ErrInvalid, *leaseSeconds, MinLeaseSeconds, MaxLeaseSeconds)
	}
	if _, _, err := s.owned(ctx, c, id); err != nil {
		return nil, nil, err
	}
	var out *Lease
	_, err := store.Update(ctx, s.Store, LeasesPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		l, err := decodeLease(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		now := s.now()
		if !l.Playable(now) {
			return nil, nil, nil, fmt.Errorf("%w: lease %s is %s; create a new one", ErrLeaseConflict, id, stateAt(l, now))
		}
		if !l.ExpiresAt.Before(l.AbsoluteExpiresAt) {
			return nil, nil, nil, fmt.Errorf("%w: lease %s already reaches its absolute lifetime (%s)", ErrLeaseConflict, id, l.AbsoluteExpiresAt.Format(time.RFC3339))
		}
		secs := l.LeaseSeconds
		if leaseSeconds != nil {
			secs = *leaseSeconds
		}
		l.round(now, secs)
		l.RenewCount++
		out = l
		put, err := putLease(l)
		return put.Value, nil, nil, err
	})
	if errors.Is(err, store.ErrContended) {
		return nil, nil, fmt.Errorf("%w: renewed concurrently; read it and retry", ErrLeaseConflict)
	}
	if err != nil {
		return nil, nil, err
	}
	srcs, err := s.leaseSources(ctx, out)
	return out, srcs, err
}

func stateAt(l *Lease, now time.Time) string {
	c := *l
	c.settle(now)
	return strings.ToLower(c.State)
}

// Revoke ends a lease: new connections are refused at once; established
// ones are cut only when cut is true (the contract's default keeps them).
func (s *Service) Revoke(ctx context.Context, c Caller, id, reason string, cut bool) (*Lease, error) {
	if _, _, err := s.owned(ctx, c, id); err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "deleted by its API token"
	}
	var out *Lease
	_, err := store.Update(ctx, s.Store, LeasesPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		l, err := decodeLease(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if l.State == StateActive {
			t := s.now()
			l.State, l.EndedAt, l.EndReason = StateRevoked, &t, truncate(reason, 256)
		}
		l.CutRequested = l.CutRequested || cut
		out = l
		put, err := putLease(l)
		return put.Value, nil, nil, err
	})
	return out, err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
