package rooms

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// signalling answers offers with numbered sessions and records releases:
// these tests are about the control plane's records, not the SFU (the e2e
// rooms test drives the real engine).
type signalling struct {
	mu       sync.Mutex
	n        int
	released []string
}

func (m *signalling) Offer(_ context.Context, _, kind, _, _ string, _ []byte) ([]byte, string, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return []byte("v=0\r\n"), fmt.Sprintf("%s-%d", kind, m.n), nil, nil
}
func (m *signalling) Trickle(context.Context, string, string, string, string, []byte) error {
	return nil
}
func (m *signalling) Release(_ context.Context, _, _, _, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = append(m.released, session)
	return nil
}
func (m *signalling) PlayURL(_ context.Context, _, stream string) (string, error) {
	return "http://127.0.0.1:8080/" + App + "/" + stream + ".live.flv", nil
}
func (m *signalling) PickMediaServer(context.Context) (string, error) { return "ms1", nil }

func (m *signalling) wasReleased(session string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.released, session)
}

// meeting is a room with a publisher and a subscriber admitted.
type meeting struct {
	s         *Service
	clk       *clock
	media     *signalling
	room      *Room
	publisher *Joined
	viewer    *Joined
}

func newMeeting(t *testing.T) *meeting {
	t.Helper()
	node := storetest.SingleNode(t, Index)
	clk := &clock{t: time.Now().UTC()}
	m := &signalling{}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, HeartbeatTimeout: time.Hour, Media: m,
		MACKeys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Lifecycle"})
	pj, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "pub",
		Capabilities: []string{CapCameraPublish, CapMicrophonePublish}, BypassWaitingRoom: true})})
	if err != nil {
		t.Fatal(err)
	}
	vj, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "view",
		Role: RoleViewer, Capabilities: []string{CapSubscribe}, BypassWaitingRoom: true})})
	if err != nil {
		t.Fatal(err)
	}
	return &meeting{s: s, clk: clk, media: m, room: r, publisher: pj, viewer: vj}
}

// publish makes an Active publication of the publisher.
func (m *meeting) publish(t *testing.T) *Publication {
	t.Helper()
	ctx := context.Background()
	pub, err := m.s.CreatePublication(ctx, m.room.RoomID, m.publisher.Token, PublicationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Publish(ctx, m.room.RoomID, m.publisher.Token, pub.PublicationID, []byte("v=0\r\n")); err != nil {
		t.Fatal(err)
	}
	got, _, err := m.s.publication(ctx, m.room.RoomID, pub.PublicationID)
	if err != nil || got.State != PublicationActive {
		t.Fatalf("publication after WHIP: %+v %v", got, err)
	}
	return got
}

// subscribe makes an Active subscription of the viewer to pub.
func (m *meeting) subscribe(t *testing.T, pub *Publication) *Subscription {
	t.Helper()
	ctx := context.Background()
	sub, err := m.s.CreateSubscription(ctx, m.room.RoomID, m.viewer.Token, pub.PublicationID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Subscribe(ctx, m.room.RoomID, m.viewer.Token, sub.SubscriptionID, []byte("v=0\r\n")); err != nil {
		t.Fatal(err)
	}
	return m.subscription(t, sub.SubscriptionID)
}

func (m *meeting) subscription(t *testing.T, id string) *Subscription {
	t.Helper()
	sub, _, err := m.s.ownSubscription(context.Background(), m.room.RoomID, m.viewer.Token, id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// publicationEvents are the rtc.publication.* events written, checked to
// carry exactly contract A's data fields.
func (m *meeting) publicationEvents(t *testing.T) []string {
	t.Helper()
	want := []string{"EventType", "ParticipantId", "RoomId", "Sequence", "TargetParticipantId", "occurredAtUtc"}
	var names []string
	for _, ev := range outbox(t, m.s) {
		if !strings.HasPrefix(ev.EventName, "rtc.publication.") {
			continue
		}
		var data map[string]any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if fmt.Sprint(keys) != fmt.Sprint(want) {
			t.Fatalf("%s data fields %v, want %v", ev.EventName, keys, want)
		}
		if data["ParticipantId"] != string(m.publisher.Participant.ParticipantID) || data["EventType"] != ev.EventName {
			t.Fatalf("%s data %s", ev.EventName, ev.Data)
		}
		names = append(names, ev.EventName)
	}
	return names
}

// TestSubscriptionsEndWithTheirPublication: a publication that fails (the
// engine reports its stream gone) or is stopped by its publisher ends its
// subscriptions and releases their media sessions; only the
// rtc.publication.* events are written (contract A has no subscription
// event), with exactly their data fields.
func TestSubscriptionsEndWithTheirPublication(t *testing.T) {
	m := newMeeting(t)
	ctx := context.Background()

	failed := m.publish(t)
	sub := m.subscribe(t, failed)
	if sub.State != SubscriptionActive || sub.EngineSession == "" {
		t.Fatalf("subscription after WHEP: %+v", sub)
	}
	if err := m.s.StreamEnded(ctx, streamName(m.room.RoomID, failed.PublicationID)); err != nil {
		t.Fatal(err)
	}
	if got := m.subscription(t, sub.SubscriptionID); got.State != SubscriptionEnded || got.EngineSession != "" {
		t.Fatalf("subscription of a failed publication: %+v", got)
	}
	if !m.media.wasReleased(sub.EngineSession) {
		t.Fatal("the subscription's WHEP session was not released")
	}

	stopped := m.publish(t)
	sub = m.subscribe(t, stopped)
	if err := m.s.Unpublish(ctx, m.room.RoomID, m.publisher.Token, stopped.PublicationID, stopped.EngineSession); err != nil {
		t.Fatal(err)
	}
	if got := m.subscription(t, sub.SubscriptionID); got.State != SubscriptionEnded {
		t.Fatalf("subscription of a stopped publication: %+v", got)
	}
	if _, err := m.s.Subscribe(ctx, m.room.RoomID, m.viewer.Token, sub.SubscriptionID, []byte("v=0\r\n")); err == nil {
		t.Fatal("an ended subscription took a WHEP offer")
	}
	got := m.publicationEvents(t)
	want := []string{events.RTCPublicationStarted, events.RTCPublicationFailed, events.RTCPublicationStarted, events.RTCPublicationStopped}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestSweepFailsPublicationsNeverReady: an Active publication whose stream
// the engine never registered (its publisher's ICE failed before any
// media, so no stream report comes) fails at the first sweep past the
// ready timeout, with rtc.publication.failed, its WHIP session released
// and its subscriptions ended; one whose stream registered (even before
// the WHIP answer was written) stays Active.
func TestSweepFailsPublicationsNeverReady(t *testing.T) {
	m := newMeeting(t)
	ctx := context.Background()
	silent := m.publish(t)
	sub := m.subscribe(t, silent)
	ready := m.publish(t)
	early, err := m.s.CreatePublication(ctx, m.room.RoomID, m.publisher.Token, PublicationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The engine's report of early's stream overtakes its WHIP answer.
	if err := m.s.StreamReady(ctx, streamName(m.room.RoomID, early.PublicationID)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Publish(ctx, m.room.RoomID, m.publisher.Token, early.PublicationID, []byte("v=0\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := m.s.StreamReady(ctx, streamName(m.room.RoomID, ready.PublicationID)); err != nil {
		t.Fatal(err)
	}
	state := func(id string) string {
		t.Helper()
		pub, _, err := m.s.publication(ctx, m.room.RoomID, id)
		if err != nil {
			t.Fatal(err)
		}
		return pub.State
	}
	m.clk.add(DefaultReadyTimeout - time.Second)
	if _, _, err := m.s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(silent.PublicationID); got != PublicationActive {
		t.Fatalf("a publication within its ready timeout is %s", got)
	}
	m.clk.add(2 * time.Second)
	if _, _, err := m.s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(silent.PublicationID); got != PublicationFailed {
		t.Fatalf("a publication never ready past the timeout is %s, want Failed", got)
	}
	if !m.media.wasReleased(silent.EngineSession) {
		t.Fatal("the failed publication's WHIP session was not released")
	}
	if got := m.subscription(t, sub.SubscriptionID); got.State != SubscriptionEnded {
		t.Fatalf("its subscription: %+v", got)
	}
	for _, id := range []string{ready.PublicationID, early.PublicationID} {
		if got := state(id); got != PublicationActive {
			t.Fatalf("a publication whose stream registered is %s", got)
		}
	}
	if _, _, err := m.s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got := m.publicationEvents(t)
	want := []string{events.RTCPublicationStarted, events.RTCPublicationStarted, events.RTCPublicationStarted, events.RTCPublicationFailed}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestPlaybackTicketAdmitsOneClient: an HTTP-FLV playback ticket binds to
// the first client that plays with it; that client may reconnect, another
// address is refused, even within the ticket's minute; the binding goes
// with the sweep once the ticket expired.
func TestPlaybackTicketAdmitsOneClient(t *testing.T) {
	m := newMeeting(t)
	ctx := context.Background()
	pub := m.publish(t)
	link, _, err := m.s.PlaybackTicket(ctx, m.room.RoomID, m.viewer.Token, pub.PublicationID)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	play := func(addr string) (bool, string) {
		t.Helper()
		ok, reason, err := m.s.AuthorizeEngine(ctx, EngineRequest{Stream: streamName(m.room.RoomID, pub.PublicationID), Protocol: "http-flv",
			Ticket: u.Query().Get("svc_ticket"), RemoteAddr: addr})
		if err != nil {
			t.Fatal(err)
		}
		return ok, reason
	}
	if ok, reason := play("127.0.0.1:40000"); !ok {
		t.Fatalf("first use refused: %s", reason)
	}
	if ok, reason := play("127.0.0.1:40002"); !ok {
		t.Fatalf("the same client reconnecting refused: %s", reason)
	}
	if ok, _ := play("127.0.0.2:40000"); ok {
		t.Fatal("a playback ticket admitted a second client")
	}
	if ok, _ := play(""); ok {
		t.Fatal("a playback ticket admitted a client of unknown address")
	}
	m.clk.add(PlaybackTicketLifetime + time.Second)
	if _, _, err := m.s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := m.s.Store.Range(ctx, flvUsePrefix, store.RangeOptions{End: store.PrefixEnd(flvUsePrefix)})
	if err != nil || len(resp.KVs) != 0 {
		t.Fatalf("bindings of expired tickets left: %v %v", resp, err)
	}
}
