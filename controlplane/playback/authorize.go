package playback

import (
	"context"
	"errors"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// PlayRequest is what the engine's on_play hook asks about.
type PlayRequest struct {
	MediaServerID string
	Vhost         string
	App           string
	Stream        string
	// Protocol is the engine's name of the output (http-flv, http-fmp4,
	// hls, rtsp, webrtc).
	Protocol string
	Params   map[string]string
	// RemoteAddr is the player's address (host:port) as the engine saw it.
	RemoteAddr string
}

// Decision is the answer to on_play.
type Decision struct {
	Allow  bool
	Reason string
	// LeaseID tags the player so the lease's players can be cut together.
	LeaseID string
	// CacheFor bounds how long the engine may reuse this answer for the
	// same request: never for a one-time ticket, and for a lease no longer
	// than the lease's current round.
	CacheFor time.Duration
}

// maxDecisionCache keeps a revoked lease from being served from an engine's
// cache for long; a revocation also clears the engine's cache through the
// cut path.
const maxDecisionCache = 5 * time.Second

func deny(reason string) Decision { return Decision{Reason: reason} }

// AuthorizePlay decides on_play: the ticket must carry a valid MAC for the
// requested stream, and its grant must be live and cover the protocol; a
// lease also needs its creating token to be valid and still hold the
// permission. Denials carry a reason for the engine's log, never a secret.
func (s *Service) AuthorizePlay(ctx context.Context, r PlayRequest) (Decision, error) {
	vhost := r.Vhost
	if vhost == "" {
		vhost = DefaultVhost
	}
	tok := r.Params[TicketParam]
	if tok == "" {
		return deny("no " + TicketParam + " in the URL"), nil
	}
	t, ok := s.parseTicket(tok, vhost, r.App, r.Stream)
	if !ok {
		return deny("the ticket is malformed, tampered with, or for another stream"), nil
	}
	proto := Protocol(r.Protocol)
	switch t.kind {
	case kindOneTime:
		return s.authorizeOneTime(ctx, t.id, r, proto)
	case kindLink:
		return s.authorizeLink(ctx, t.id, r)
	case kindSystem:
		return s.authorizeSystem(ctx, t.id, r, vhost)
	}
	now := s.now()
	l, err := s.leaseForPlay(ctx, t.id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return deny("no such lease"), nil
		}
		return Decision{}, err
	}
	switch {
	case !l.Playable(now):
		return deny("the lease is " + stateAt(l, now)), nil
	case !l.allows(proto):
		return deny("the lease does not cover protocol " + r.Protocol), nil
	case r.MediaServerID != "" && l.MediaServerID != r.MediaServerID:
		return deny("the lease is for another media server"), nil
	case l.ResourceKind.recorded() != isRecorded(vhost):
		return deny("the lease is for another kind of resource"), nil
	}
	if l.ResourceKind.recorded() && s.Resources != nil {
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
		return deny("the API token that created the lease is no longer valid or lost " + l.Permission), nil
	}
	cache := min(maxDecisionCache, l.ExpiresAt.Sub(now))
	return Decision{Allow: true, LeaseID: l.LeaseID, CacheFor: cache}, nil
}

// leaseForPlay reads a lease, cached for the store revision; a lease just
// created through another control node may not have arrived here, so a miss
// catches up with the leader once before giving up.
func (s *Service) leaseForPlay(ctx context.Context, id string) (*Lease, error) {
	rev := s.revision()
	if l, ok := s.leases.Get(id, rev); ok {
		return l, nil
	}
	l, _, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) && s.Catchup != nil {
		if cerr := s.Catchup(ctx); cerr != nil {
			return nil, cerr
		}
		rev = s.revision()
		l, _, err = s.Get(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	s.leases.Put(id, rev, l)
	return l, nil
}

func (s *Service) authorizeOneTime(ctx context.Context, id string, r PlayRequest, proto Protocol) (Decision, error) {
	g, err := s.consumeOneTime(ctx, id)
	if err == nil && g == nil && s.Catchup != nil {
		if err := s.Catchup(ctx); err != nil {
			return Decision{}, err
		}
		g, err = s.consumeOneTime(ctx, id)
	}
	if err != nil {
		if errors.Is(err, store.ErrContended) {
			return deny("the one-time URL was used concurrently"), nil
		}
		return Decision{}, err
	}
	now := s.now()
	switch {
	case g == nil:
		return deny("the one-time URL was already used or does not exist"), nil
	case !now.Before(g.ExpiresAt):
		return deny("the one-time URL expired"), nil
	case g.Protocol != proto:
		return deny("the one-time URL is for protocol " + string(g.Protocol)), nil
	case r.MediaServerID != "" && g.MediaServerID != r.MediaServerID:
		return deny("the one-time URL is for another media server"), nil
	}
	if g.TokenID == systemGrant {
		return Decision{Allow: true}, nil
	}
	ts, err := s.Tokens(ctx, g.TokenID)
	if err != nil {
		return Decision{}, err
	}
	if !ts.Valid || !s.Grants(ts.Permissions, "streams.play") {
		return deny("the API token that issued the URL is no longer valid or lost streams.play"), nil
	}
	return Decision{Allow: true}, nil
}
