package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

func publicationKey(room RoomID, id string) string {
	return publicationsPrefix + string(room) + "/" + id
}

// PublicationRequest is a device's request to publish.
type PublicationRequest struct {
	// Source is camera (the default) or screen.
	Source string
	// MediaKinds asked for; both when empty.
	MediaKinds []string
}

// admitted verifies a participant token and requires an admitted
// participant: one held in the waiting room may only heartbeat and leave.
func (s *Service) admitted(ctx context.Context, roomID RoomID, token string) (*Participant, *Room, error) {
	p, err := s.Verify(ctx, roomID, token)
	if err != nil {
		return nil, nil, err
	}
	if p.State != ParticipantAdmitted {
		return nil, nil, fmt.Errorf("%w: the participant is waiting for admission", ErrForbidden)
	}
	r, _, err := s.room(ctx, roomID)
	if err != nil {
		return nil, nil, err
	}
	if r.Status != RoomOpen {
		return nil, nil, ErrRoomClosed
	}
	return p, r, nil
}

// CreatePublication creates a publication of the participant. The media
// kinds asked for are filtered by the participant's capabilities
// (camera.publish for video, microphone.publish for audio); a request
// left with nothing to send is refused, so a viewer never publishes.
func (s *Service) CreatePublication(ctx context.Context, roomID RoomID, token string, req PublicationRequest) (*Publication, error) {
	p, _, err := s.admitted(ctx, roomID, token)
	if err != nil {
		return nil, err
	}
	switch req.Source {
	case "":
		req.Source = "camera"
	case "camera", "screen":
	default:
		return nil, fmt.Errorf("%w: source is camera or screen", ErrInvalid)
	}
	asked := req.MediaKinds
	if len(asked) == 0 {
		asked = []string{KindAudio, KindVideo}
	}
	kinds := []string{}
	for _, k := range asked {
		var need string
		switch k {
		case KindAudio:
			need = CapMicrophonePublish
		case KindVideo:
			need = CapCameraPublish
		default:
			return nil, fmt.Errorf("%w: media kinds are audio and video", ErrInvalid)
		}
		if slices.Contains(p.Capabilities, need) && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%w: the participant's role and capabilities allow none of the media asked for", ErrForbidden)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := s.now()
	pub := &Publication{PublicationID: id.String(), RoomID: roomID, ParticipantID: p.ParticipantID, Source: req.Source, MediaKinds: kinds,
		State: PublicationPending, CreatedAt: now, UpdatedAt: now}
	val, err := json.Marshal(pub)
	if err != nil {
		return nil, err
	}
	pkey := participantKey(roomID, p.ParticipantID)
	pkv, _, err := store.Get(ctx, s.Store, pkey, store.Local)
	if err != nil {
		return nil, err
	}
	if pkv == nil {
		return nil, ErrTokenInvalid
	}
	// The participant must still be the one verified (not left, not
	// refreshed) when the publication is written.
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(pkey, pkv.ModRevision)},
		Then: []store.Op{store.Put(publicationKey(roomID, pub.PublicationID), val)}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, ErrTokenInvalid
	}
	return pub, nil
}

// Publications lists the room's Active publications for an admitted
// participant: what it may subscribe to.
func (s *Service) Publications(ctx context.Context, roomID RoomID, token string) ([]Publication, error) {
	if _, _, err := s.admitted(ctx, roomID, token); err != nil {
		return nil, err
	}
	all, err := s.roomPublications(ctx, roomID)
	if err != nil {
		return nil, err
	}
	out := []Publication{}
	for _, kv := range all {
		pub, err := store.Decode[Publication](kv)
		if err != nil {
			return nil, err
		}
		if pub.State == PublicationActive {
			out = append(out, pub)
		}
	}
	return out, nil
}

func (s *Service) roomPublications(ctx context.Context, roomID RoomID) ([]*store.KeyValue, error) {
	prefix := publicationsPrefix + string(roomID) + "/"
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix), Consistency: store.Local})
	if err != nil {
		return nil, err
	}
	return resp.KVs, nil
}

func (s *Service) publication(ctx context.Context, roomID RoomID, id string) (*Publication, *store.KeyValue, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, nil, ErrNotFound
	}
	kv, _, err := store.Get(ctx, s.Store, publicationKey(roomID, id), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrNotFound
	}
	pub, err := store.Decode[Publication](kv)
	if err != nil {
		return nil, nil, err
	}
	return &pub, kv, nil
}

// Session is an answered WHIP or WHEP offer.
type Session struct {
	Answer []byte
	// ID is the media session id: the last segment of the resource URL.
	ID    string
	Notes []string
}

// Publish relays a WHIP offer for the participant's own publication to
// the room's media server. An answered offer makes the publication Active
// (rtc.publication.started); a media server that cannot take it makes it
// Failed (rtc.publication.failed); an offer the engine finds unusable
// (no ICE credentials, only unsupported codecs) leaves it Pending for
// another try.
func (s *Service) Publish(ctx context.Context, roomID RoomID, token, publicationID string, sdp []byte) (*Session, error) {
	p, r, err := s.admitted(ctx, roomID, token)
	if err != nil {
		return nil, err
	}
	pub, kv, err := s.publication(ctx, roomID, publicationID)
	if err != nil {
		return nil, err
	}
	if pub.ParticipantID != p.ParticipantID {
		return nil, fmt.Errorf("%w: the publication is another device's", ErrForbidden)
	}
	if pub.State != PublicationPending {
		return nil, fmt.Errorf("%w: it is %s", ErrPublicationState, pub.State)
	}
	fail := func(err error) (*Session, error) {
		if !errors.Is(err, ErrSDPRefused) {
			if ferr := s.setPublication(ctx, pub, kv, PublicationFailed, "", events.RTCPublicationFailed); ferr != nil {
				return nil, errors.Join(err, ferr)
			}
		}
		return nil, err
	}
	ms, err := s.mediaServer(ctx, r)
	if err != nil {
		return fail(err)
	}
	stream := streamName(roomID, publicationID)
	ticket := s.engineTicket(ticketPublish, stream, p.ParticipantID, s.now().Add(relayTicketLifetime))
	answer, session, notes, err := s.Media.Offer(ctx, ms, "whip", stream, ticket, sdp)
	if err != nil {
		return fail(err)
	}
	if err := s.setPublication(ctx, pub, kv, PublicationActive, session, events.RTCPublicationStarted); err != nil {
		// Recorded nothing: the engine session must not outlive it.
		_ = s.Media.Release(context.WithoutCancel(ctx), ms, "whip", stream, session)
		return nil, err
	}
	if err := s.recordPublication(ctx, pub); err != nil {
		// The publication goes on; the recording reports its failure.
		if cur, _, rerr := s.room(ctx, roomID); rerr == nil && cur.CurrentRecordingID != "" {
			_, _ = s.recordingFailed(ctx, roomID, cur.CurrentRecordingID, err)
		}
	}
	return &Session{Answer: answer, ID: session, Notes: notes}, nil
}

// setPublication moves a publication to state with its event, in one Txn
// that requires the publication unchanged since kv was read.
func (s *Service) setPublication(ctx context.Context, pub *Publication, kv *store.KeyValue, state, session, event string) error {
	for attempt := 0; attempt < 5; attempt++ {
		r, rkv, err := s.room(ctx, pub.RoomID)
		if err != nil {
			return err
		}
		now := s.now()
		next := *pub
		next.State, next.EngineSession, next.UpdatedAt = state, session, now
		ev, err := s.roomEvent(r, event, pub.ParticipantID, now)
		if err != nil {
			return err
		}
		pval, err := json.Marshal(next)
		if err != nil {
			return err
		}
		rval, err := json.Marshal(r)
		if err != nil {
			return err
		}
		ops := []store.Op{ev, store.Put(kv.Key, pval), store.Put(rkv.Key, rval)}
		if state == PublicationStopped || state == PublicationFailed {
			ops = append(ops, store.Delete(readyKey(pub.RoomID, pub.PublicationID)))
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{
			Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision), store.ModRevisionIs(rkv.Key, rkv.ModRevision)},
			Then:     ops,
		})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			*pub = next
			if state == PublicationStopped || state == PublicationFailed {
				// The room sweep ends any left over should this fail.
				return s.endPublicationSubscriptions(ctx, r, pub.PublicationID)
			}
			return nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return err
		}
		cur, _, err := store.Get(ctx, s.Store, kv.Key, store.Local)
		if err != nil {
			return err
		}
		if cur == nil || cur.ModRevision != kv.ModRevision {
			return fmt.Errorf("%w: the publication changed meanwhile", ErrPublicationState)
		}
	}
	return fmt.Errorf("%w: publication %s", store.ErrContended, pub.PublicationID)
}

// mediaServer is the room's media server, chosen (and kept with the
// room) when the room was created without one.
func (s *Service) mediaServer(ctx context.Context, r *Room) (string, error) {
	if r.MediaServerID != "" {
		return r.MediaServerID, nil
	}
	if s.Media == nil {
		return "", ErrMediaUnavailable
	}
	ms, err := s.Media.PickMediaServer(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	for attempt := 0; attempt < 5; attempt++ {
		cur, kv, err := s.room(ctx, r.RoomID)
		if err != nil {
			return "", err
		}
		if cur.MediaServerID != "" {
			return cur.MediaServerID, nil
		}
		cur.MediaServerID = ms
		val, err := json.Marshal(cur)
		if err != nil {
			return "", err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Put(kv.Key, val)}})
		if err != nil {
			return "", err
		}
		if resp.Succeeded {
			return ms, nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: room %s", store.ErrContended, r.RoomID)
}

// ownPublicationSession finds the participant's Active publication whose
// engine session is session.
func (s *Service) ownPublicationSession(ctx context.Context, roomID RoomID, token, publicationID, session string) (*Publication, *store.KeyValue,
	*Room, error) {
	p, err := s.Verify(ctx, roomID, token)
	if err != nil {
		return nil, nil, nil, err
	}
	pub, kv, err := s.publication(ctx, roomID, publicationID)
	if err != nil {
		return nil, nil, nil, err
	}
	if pub.ParticipantID != p.ParticipantID {
		return nil, nil, nil, fmt.Errorf("%w: the publication is another device's", ErrForbidden)
	}
	if pub.State != PublicationActive || pub.EngineSession != session {
		return nil, nil, nil, ErrNotFound
	}
	r, _, err := s.room(ctx, roomID)
	if err != nil {
		return nil, nil, nil, err
	}
	return pub, kv, r, nil
}

// TricklePublication relays a trickle ICE fragment to the publication's
// engine session.
func (s *Service) TricklePublication(ctx context.Context, roomID RoomID, token, publicationID, session string, frag []byte) error {
	pub, _, r, err := s.ownPublicationSession(ctx, roomID, token, publicationID, session)
	if err != nil {
		return err
	}
	return s.Media.Trickle(ctx, r.MediaServerID, "whip", streamName(roomID, pub.PublicationID), session, frag)
}

// Unpublish releases the publication's engine session (its subscribers'
// sessions end with the stream) and stops it (rtc.publication.stopped).
func (s *Service) Unpublish(ctx context.Context, roomID RoomID, token, publicationID, session string) error {
	pub, kv, r, err := s.ownPublicationSession(ctx, roomID, token, publicationID, session)
	if err != nil {
		return err
	}
	return s.stopPublication(ctx, r, pub, kv)
}

// stopPublication records the stop first and then releases the engine
// session: the engine's report that the stream ended then finds the
// publication Stopped, not Active (which would read as a failure).
func (s *Service) stopPublication(ctx context.Context, r *Room, pub *Publication, kv *store.KeyValue) error {
	session := pub.EngineSession
	err := s.setPublication(ctx, pub, kv, PublicationStopped, "", events.RTCPublicationStopped)
	if pub.State != PublicationStopped {
		return err
	}
	// Stopped (err is then only about ending its subscriptions): the
	// engine session goes all the same.
	if session == "" || s.Media == nil {
		return err
	}
	return errors.Join(err, s.Media.Release(ctx, r.MediaServerID, "whip", streamName(r.RoomID, pub.PublicationID), session))
}

// StreamEnded takes the engine's report that a room stream ended
// (on_stream_changed, unregistered). A publication still Active lost its
// publisher without a DELETE (ICE or DTLS failed, the device vanished):
// it becomes Failed (rtc.publication.failed). Other streams are ignored.
func (s *Service) StreamEnded(ctx context.Context, stream string) error {
	roomID, pubID, ok := strings.Cut(stream, ".")
	if !ok {
		return nil
	}
	pub, kv, err := s.publication(ctx, RoomID(roomID), pubID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil || pub.State != PublicationActive {
		return err
	}
	err = s.setPublication(ctx, pub, kv, PublicationFailed, "", events.RTCPublicationFailed)
	if errors.Is(err, ErrPublicationState) {
		return nil // stopped meanwhile
	}
	return err
}

func readyKey(room RoomID, publication string) string {
	return readyPrefix + string(room) + "/" + publication
}

// StreamReady takes the engine's report that a room stream registered
// (on_stream_changed, registered): its publication carries media, and the
// sweep's ready deadline no longer applies to it. Other streams are
// ignored.
func (s *Service) StreamReady(ctx context.Context, stream string) error {
	roomID, pubID, ok := strings.Cut(stream, ".")
	if !ok {
		return nil
	}
	pub, _, err := s.publication(ctx, RoomID(roomID), pubID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil || (pub.State != PublicationActive && pub.State != PublicationPending) {
		return err
	}
	// Pending: the report overtook the write of the WHIP answer.
	_, err = s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(readyKey(pub.RoomID, pub.PublicationID), []byte("1"))}})
	return err
}

// sweepPublications fails the room's Active publications whose stream
// never became ready within the ready timeout (the publisher's ICE or
// DTLS failed before any media: the engine reports nothing then), with
// rtc.publication.failed, and ends any subscription left on a publication
// that ended (should ending it with the publication have failed).
func (s *Service) sweepPublications(ctx context.Context, r *Room) (failed int, err error) {
	kvs, err := s.roomPublications(ctx, r.RoomID)
	if err != nil {
		return 0, err
	}
	now := s.now()
	ended := map[string]bool{}
	var errs []error
	for _, kv := range kvs {
		pub, err := store.Decode[Publication](kv)
		if err != nil {
			return failed, err
		}
		if pub.State == PublicationStopped || pub.State == PublicationFailed {
			ended[pub.PublicationID] = true
			continue
		}
		if pub.State != PublicationActive || now.Sub(pub.UpdatedAt) < s.readyTimeout() {
			continue
		}
		ready, _, err := store.Get(ctx, s.Store, readyKey(r.RoomID, pub.PublicationID), store.Local)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ready != nil {
			continue
		}
		session := pub.EngineSession
		err = s.setPublication(ctx, &pub, kv, PublicationFailed, "", events.RTCPublicationFailed)
		if pub.State != PublicationFailed {
			if !errors.Is(err, ErrPublicationState) {
				errs = append(errs, err) // else stopped or ready meanwhile
			}
			continue
		}
		failed++
		errs = append(errs, err)
		if session != "" && s.Media != nil {
			errs = append(errs, s.Media.Release(ctx, r.MediaServerID, "whip", streamName(r.RoomID, pub.PublicationID), session))
		}
	}
	if len(ended) > 0 {
		errs = append(errs, s.endSubscriptions(ctx, r, func(sub *Subscription) bool { return ended[sub.PublicationID] }))
	}
	return failed, errors.Join(errs...)
}

// releaseParticipant stops the publications of a participant who ended
// (left, timed out, or the room closed), releasing their media.
func (s *Service) releaseParticipant(ctx context.Context, r *Room, participant ParticipantID) error {
	kvs, err := s.roomPublications(ctx, r.RoomID)
	if err != nil {
		return err
	}
	var errs []error
	if participant != "" {
		errs = append(errs, s.releaseSubscriptions(ctx, r, participant))
	}
	for _, kv := range kvs {
		pub, err := store.Decode[Publication](kv)
		if err != nil {
			return err
		}
		if (participant != "" && pub.ParticipantID != participant) || (pub.State != PublicationActive && pub.State != PublicationPending) {
			continue
		}
		if pub.State == PublicationPending {
			// Never carried media: no event, just no longer usable.
			pub.State = PublicationStopped
			val, err := json.Marshal(pub)
			if err != nil {
				return err
			}
			_, err = s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
				Then: []store.Op{store.Put(kv.Key, val)}})
			errs = append(errs, err)
			continue
		}
		if err := s.stopPublication(ctx, r, &pub, kv); err != nil && !errors.Is(err, ErrPublicationState) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
