package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

func subscriptionKey(room RoomID, id string) string {
	return subscriptionsPrefix + string(room) + "/" + id
}

// subscriber is an admitted participant allowed to subscribe, with the
// Active publication of its room it names.
func (s *Service) subscriber(ctx context.Context, roomID RoomID, token, publicationID string) (*Participant, *Room, *Publication, error) {
	p, r, err := s.admitted(ctx, roomID, token)
	if err != nil {
		return nil, nil, nil, err
	}
	if !slices.Contains(p.Capabilities, CapSubscribe) {
		return nil, nil, nil, fmt.Errorf("%w: the participant may not subscribe (publications.subscribe)", ErrForbidden)
	}
	pub, _, err := s.publication(ctx, roomID, publicationID)
	if err != nil {
		return nil, nil, nil, err
	}
	if pub.State != PublicationActive {
		return nil, nil, nil, ErrPublicationNotActive
	}
	return p, r, pub, nil
}

// CreateSubscription binds the calling device to an Active publication
// of its room.
func (s *Service) CreateSubscription(ctx context.Context, roomID RoomID, token, publicationID string) (*Subscription, error) {
	p, _, pub, err := s.subscriber(ctx, roomID, token, publicationID)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	sub := &Subscription{SubscriptionID: id.String(), RoomID: roomID, ParticipantID: p.ParticipantID, PublicationID: pub.PublicationID,
		State: SubscriptionPending, CreatedAt: s.now()}
	val, err := json.Marshal(sub)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(subscriptionKey(roomID, sub.SubscriptionID), val)}}); err != nil {
		return nil, err
	}
	return sub, nil
}

func (s *Service) ownSubscription(ctx context.Context, roomID RoomID, token, subscriptionID string) (*Subscription, *store.KeyValue, error) {
	p, err := s.Verify(ctx, roomID, token)
	if err != nil {
		return nil, nil, err
	}
	if _, err := uuid.Parse(subscriptionID); err != nil {
		return nil, nil, ErrNotFound
	}
	kv, _, err := store.Get(ctx, s.Store, subscriptionKey(roomID, subscriptionID), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrNotFound
	}
	sub, err := store.Decode[Subscription](kv)
	if err != nil {
		return nil, nil, err
	}
	if sub.ParticipantID != p.ParticipantID {
		return nil, nil, fmt.Errorf("%w: the subscription is another device's", ErrForbidden)
	}
	return &sub, kv, nil
}

// Subscribe relays a WHEP offer of the subscription's device to the
// room's media server, which plays the publication's stream.
func (s *Service) Subscribe(ctx context.Context, roomID RoomID, token, subscriptionID string, sdp []byte) (*Session, error) {
	sub, kv, err := s.ownSubscription(ctx, roomID, token, subscriptionID)
	if err != nil {
		return nil, err
	}
	if sub.State != SubscriptionPending {
		return nil, fmt.Errorf("%w: the subscription already has its media session", ErrPublicationState)
	}
	p, r, pub, err := s.subscriber(ctx, roomID, token, sub.PublicationID)
	if err != nil {
		return nil, err
	}
	stream := streamName(roomID, pub.PublicationID)
	ticket := s.engineTicket(ticketWHEP, stream, p.ParticipantID, s.now().Add(relayTicketLifetime))
	answer, session, notes, err := s.Media.Offer(ctx, r.MediaServerID, "whep", stream, ticket, sdp)
	if err != nil {
		return nil, err
	}
	sub.State, sub.EngineSession = SubscriptionActive, session
	val, err := json.Marshal(sub)
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
		Then: []store.Op{store.Put(kv.Key, val)}})
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("%w: the subscription changed meanwhile", ErrPublicationState)
	}
	if err != nil {
		_ = s.Media.Release(context.WithoutCancel(ctx), r.MediaServerID, "whep", stream, session)
		return nil, err
	}
	return &Session{Answer: answer, ID: session, Notes: notes}, nil
}

// subscriptionSession is the device's subscription whose media session
// is session.
func (s *Service) subscriptionSession(ctx context.Context, roomID RoomID, token, subscriptionID, session string) (*Subscription,
	*store.KeyValue, *Room, error) {
	sub, kv, err := s.ownSubscription(ctx, roomID, token, subscriptionID)
	if err != nil {
		return nil, nil, nil, err
	}
	if sub.State != SubscriptionActive || sub.EngineSession != session {
		return nil, nil, nil, ErrNotFound
	}
	r, _, err := s.room(ctx, roomID)
	if err != nil {
		return nil, nil, nil, err
	}
	return sub, kv, r, nil
}

// TrickleSubscription relays a trickle ICE fragment to the
// subscription's engine session.
func (s *Service) TrickleSubscription(ctx context.Context, roomID RoomID, token, subscriptionID, session string, frag []byte) error {
	sub, _, r, err := s.subscriptionSession(ctx, roomID, token, subscriptionID, session)
	if err != nil {
		return err
	}
	return s.Media.Trickle(ctx, r.MediaServerID, "whep", streamName(roomID, sub.PublicationID), session, frag)
}

// Unsubscribe releases the subscription's media session.
func (s *Service) Unsubscribe(ctx context.Context, roomID RoomID, token, subscriptionID, session string) error {
	sub, kv, r, err := s.subscriptionSession(ctx, roomID, token, subscriptionID, session)
	if err != nil {
		return err
	}
	if err := s.Media.Release(ctx, r.MediaServerID, "whep", streamName(roomID, sub.PublicationID), session); err != nil {
		return err
	}
	sub.State, sub.EngineSession = SubscriptionEnded, ""
	val, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	_, err = s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
		Then: []store.Op{store.Put(kv.Key, val)}})
	return err
}

// PlaybackTicket is a short HTTP-FLV URL of one Active publication for
// the calling device: its ticket admits only HTTP-FLV of that stream,
// only while the device is in the room and the publication Active, and is
// not a participant token.
func (s *Service) PlaybackTicket(ctx context.Context, roomID RoomID, token, publicationID string) (string, time.Time, error) {
	p, r, pub, err := s.subscriber(ctx, roomID, token, publicationID)
	if err != nil {
		return "", time.Time{}, err
	}
	base, err := s.Media.PlayURL(ctx, r.MediaServerID, streamName(roomID, pub.PublicationID))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	exp := s.now().Add(PlaybackTicketLifetime)
	ticket := s.engineTicket(ticketFLV, streamName(roomID, pub.PublicationID), p.ParticipantID, exp)
	return base + "?svc_ticket=" + url.QueryEscape(ticket), exp, nil
}

// releaseSubscriptions ends the media sessions of a participant who left
// or timed out: its token no longer plays anything.
func (s *Service) releaseSubscriptions(ctx context.Context, r *Room, participant ParticipantID) error {
	return s.endSubscriptions(ctx, r, func(sub *Subscription) bool { return sub.ParticipantID == participant })
}

// endPublicationSubscriptions ends the subscriptions of a publication
// that stopped or failed: they play nothing any more. Contract A has no
// subscription event, so none is written.
func (s *Service) endPublicationSubscriptions(ctx context.Context, r *Room, publicationID string) error {
	return s.endSubscriptions(ctx, r, func(sub *Subscription) bool { return sub.PublicationID == publicationID })
}

// endSubscriptions moves the room's subscriptions that match and are not
// yet Ended to Ended and releases their engine sessions.
func (s *Service) endSubscriptions(ctx context.Context, r *Room, match func(*Subscription) bool) error {
	prefix := subscriptionsPrefix + string(r.RoomID) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return err
	}
	var errs []error
	for _, kv := range resp.KVs {
		sub, err := store.Decode[Subscription](kv)
		if err != nil {
			return err
		}
		if sub.State == SubscriptionEnded || !match(&sub) {
			continue
		}
		session := sub.EngineSession
		sub.State, sub.EngineSession = SubscriptionEnded, ""
		val, err := json.Marshal(sub)
		if err != nil {
			return err
		}
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Put(kv.Key, val)}}); err != nil {
			errs = append(errs, err)
			continue
		}
		if session != "" && s.Media != nil {
			errs = append(errs, s.Media.Release(ctx, r.MediaServerID, "whep", streamName(r.RoomID, sub.PublicationID), session))
		}
	}
	return errors.Join(errs...)
}

// WebRTCProtocol is the engine's protocol name of WHEP viewers in flow
// reports.
const WebRTCProtocol = "webrtc"

// SubscriberSessionEnded takes the engine's report that a WHEP viewer of
// a room stream left (on_flow_report, final), named by its session (the
// WHEP resource's id): the subscription holding that session moves to
// Ended. A DELETE through the platform ended it already; a viewer that
// vanished (ICE failed, the device killed) or a session the engine
// closed ends here. Contract A has no subscription event, so none is
// written. Other streams and sessions are ignored.
func (s *Service) SubscriberSessionEnded(ctx context.Context, stream, session string) error {
	roomID, pubID, ok := strings.Cut(stream, ".")
	if !ok || session == "" {
		return nil
	}
	r, _, err := s.room(ctx, RoomID(roomID))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 5; attempt++ {
		prefix := subscriptionsPrefix + string(r.RoomID) + "/"
		resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
		if err != nil {
			return err
		}
		var found *store.KeyValue
		var sub Subscription
		for _, kv := range resp.KVs {
			x, err := store.Decode[Subscription](kv)
			if err != nil {
				return err
			}
			if x.PublicationID == pubID && x.State == SubscriptionActive && x.EngineSession == session {
				found, sub = kv, x
				break
			}
		}
		if found == nil {
			return nil
		}
		sub.State, sub.EngineSession = SubscriptionEnded, ""
		val, err := json.Marshal(sub)
		if err != nil {
			return err
		}
		tr, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(found.Key, found.ModRevision)},
			Then: []store.Op{store.Put(found.Key, val)}})
		if err != nil {
			return err
		}
		if tr.Succeeded {
			return nil
		}
		if err := s.Store.WaitForRevision(ctx, tr.Header.Revision); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: subscriptions of room %s", store.ErrContended, roomID)
}
