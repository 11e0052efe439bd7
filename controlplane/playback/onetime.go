package playback

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// OneTime is a single-use grant behind one playback URL: the first player
// that presents it consumes it.
type OneTime struct {
	TicketID      string    `json:"ticketId"`
	ChannelID     string    `json:"channelId"`
	MediaServerID string    `json:"mediaServerId"`
	Vhost         string    `json:"vhost"`
	App           string    `json:"app"`
	Stream        string    `json:"stream"`
	Protocol      Protocol  `json:"protocol"`
	TokenID       string    `json:"tokenId"`
	CreatedAt     time.Time `json:"createdAt"`
	ExpiresAt     time.Time `json:"expiresAt"`
}

// LivePlayback is the answer of the one-time playback operation.
type LivePlayback struct {
	Location  StreamLocation
	ExpiresAt time.Time
	Sources   []Source
}

// CreateOneTimeLinks issues single-use URLs for an Online stream, one per
// protocol; it never starts a channel.
func (s *Service) CreateOneTimeLinks(ctx context.Context, c Caller, channelID string, protocols []string, lifetimeSeconds *int) (*LivePlayback, error) {
	protos, err := normalizeProtocols(protocols)
	if err != nil {
		return nil, err
	}
	secs := DefaultLinkSeconds
	if lifetimeSeconds != nil {
		secs = *lifetimeSeconds
	}
	maxSecs := s.MaxLinkSeconds
	if maxSecs <= 0 {
		maxSecs = 600
	}
	if secs < MinLinkSeconds || secs > maxSecs {
		return nil, fmt.Errorf("%w: lifetimeSeconds %d is outside %d-%d", ErrInvalid, secs, MinLinkSeconds, maxSecs)
	}
	loc, err := s.Streams.Locate(ctx, channelID)
	if err != nil {
		return nil, err
	}
	if !loc.Online || loc.MediaServerID == "" {
		return nil, fmt.Errorf("%w: channel %s; start it and poll its stream until Online", ErrStreamNotReady, channelID)
	}
	now := s.now()
	exp := now.Add(time.Duration(secs) * time.Second)
	if c.ExpiresAt != nil && c.ExpiresAt.Before(exp) {
		exp = c.ExpiresAt.UTC()
	}
	grants := map[Protocol]string{}
	var ops []store.Op
	for _, p := range protos {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		g := OneTime{TicketID: id.String(), ChannelID: channelID, MediaServerID: loc.MediaServerID, Vhost: loc.Vhost, App: loc.App,
			Stream: loc.Stream, Protocol: p, TokenID: c.TokenID, CreatedAt: now, ExpiresAt: exp}
		b, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		ops = append(ops, store.Put(oneTimePrefix+g.TicketID, b))
		grants[p] = g.TicketID
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return nil, err
	}
	srcs, err := s.sources(ctx, kindOneTime, loc.MediaServerID, loc.Vhost, loc.App, loc.Stream, protos, func(p Protocol) string {
		return s.ticket(kindOneTime, grants[p], loc.Vhost, loc.App, loc.Stream)
	})
	if err != nil {
		return nil, err
	}
	return &LivePlayback{Location: loc, ExpiresAt: exp, Sources: srcs}, nil
}

// consumeOneTime uses a one-time grant: a compare-and-delete, so of two
// players presenting it at once exactly one gets in.
func (s *Service) consumeOneTime(ctx context.Context, id string) (*OneTime, error) {
	kv, _, err := store.Get(ctx, s.Store, oneTimePrefix+id, store.Local)
	if err != nil || kv == nil {
		return nil, err
	}
	g, err := store.Decode[OneTime](kv)
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{store.Delete(kv.Key)}})
	if err != nil || !resp.Succeeded {
		return nil, err
	}
	return &g, nil
}

// SystemLink issues one single-use URL for the control plane's own use (a
// snapshot grabbed with ffmpeg): a one-time grant that belongs to no API
// token, so only the MAC of its ticket and its single use protect it. It
// is never handed to a caller.
func (s *Service) SystemLink(ctx context.Context, channelID string, proto Protocol, lifetime time.Duration) (string, error) {
	loc, err := s.Streams.Locate(ctx, channelID)
	if err != nil {
		return "", err
	}
	if !loc.Online || loc.MediaServerID == "" {
		return "", fmt.Errorf("%w: channel %s", ErrStreamNotReady, channelID)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	now := s.now()
	g := OneTime{TicketID: id.String(), ChannelID: channelID, MediaServerID: loc.MediaServerID, Vhost: loc.Vhost, App: loc.App,
		Stream: loc.Stream, Protocol: proto, TokenID: systemGrant, CreatedAt: now, ExpiresAt: now.Add(lifetime)}
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(oneTimePrefix+g.TicketID, b)}}); err != nil {
		return "", err
	}
	srcs, err := s.sources(ctx, kindOneTime, loc.MediaServerID, loc.Vhost, loc.App, loc.Stream, []Protocol{proto}, func(Protocol) string {
		return s.ticket(kindOneTime, g.TicketID, loc.Vhost, loc.App, loc.Stream)
	})
	if err != nil {
		return "", err
	}
	return srcs[0].URL, nil
}

// systemGrant marks a one-time grant of the control plane itself.
const systemGrant = "system"
