package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/testkit"
)

// room is the benchmark's meeting room and its long-lived participants.
type room struct {
	b   *bench
	id  string
	api *webrtc.API // the subscribers'
	// pubAPI is the publishers'.
	pubAPI *webrtc.API
	pub    string // the publication the joiners play
}

func (b *bench) newRoom() (*room, error) {
	var r struct{ RoomID, MediaServerID string }
	if st, body, err := b.call("POST", "/api/v2/rtc/rooms", map[string]any{"name": "roombench", "idempotencyKey": "roombench-1"}, &r); err != nil ||
		st != 200 || r.MediaServerID != "media-1" {
		return nil, fmt.Errorf("create room: %d %s %w", st, body, err)
	}
	api, err := newAPI(false)
	if err != nil {
		return nil, err
	}
	pubAPI, err := newAPI(true)
	if err != nil {
		return nil, err
	}
	return &room{b: b, id: r.RoomID, api: api, pubAPI: pubAPI}, nil
}

func (r *room) device() string { return "/api/v2/rtc/session/rooms/" + r.id }

// ticket is a fresh access ticket from the business backend.
func (r *room) ticket(subject string, caps ...string) (string, error) {
	var tk struct{ AccessTicket string }
	if st, body, err := r.b.call("POST", "/api/v2/rtc/rooms/"+r.id+"/access-tickets", map[string]any{"subjectIssuer": "roombench",
		"subjectId": subject, "capabilities": caps}, &tk); err != nil || st != 200 {
		return "", fmt.Errorf("ticket: %d %s %w", st, body, err)
	}
	return tk.AccessTicket, nil
}

// deviceCall is a participant's call with its token (X-Svc-RTC-Token);
// an answer other than 2xx is an error.
func deviceCall(api, token, method, path string, body, out any) error {
	st, data, err := benchdoc.CallAs(api, "X-Svc-RTC-Token", token, method, path, body, out)
	if err != nil {
		return err
	}
	if st/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, st, data)
	}
	return nil
}

// join joins with an access ticket and answers the participant token.
func (r *room) join(ticket string) (string, error) {
	var j struct{ ParticipantToken, AdmissionStatus string }
	if err := deviceCall(r.b.api, "", "POST", r.device()+"/join", map[string]any{"accessTicket": ticket, "platform": "browser"}, &j); err != nil {
		return "", err
	}
	if j.AdmissionStatus != "Admitted" {
		return "", fmt.Errorf("join: %s", j.AdmissionStatus)
	}
	return j.ParticipantToken, nil
}

// url makes a path the API answered (WHIP, WHEP, Location) absolute.
func (r *room) url(p string) string {
	if strings.HasPrefix(p, "http") {
		return p
	}
	return r.b.api + p
}

// addPublisher joins a participant that publishes the clip (camera and
// microphone), keeps its heartbeats going, and waits until its
// publication is Active; it answers the publication's id.
func (r *room) addPublisher(c *clip, name string) (string, error) {
	tk, err := r.ticket(name, "camera.publish", "microphone.publish")
	if err != nil {
		return "", err
	}
	token, err := r.join(tk)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	hb := make(chan struct{})
	go func() {
		defer close(hb)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				deviceCall(r.b.api, token, "POST", r.device()+"/heartbeat", nil, nil)
			}
		}
	}()
	r.b.stops = append(r.b.stops, func() { cancel(); <-hb })
	var pub struct{ PublicationID, WhipURL string }
	if err := deviceCall(r.b.api, token, "POST", r.device()+"/publications", map[string]any{"source": "camera",
		"mediaKinds": []string{"audio", "video"}}, &pub); err != nil {
		return "", err
	}
	p, err := publish(r.pubAPI, c, r.url(pub.WhipURL), token)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	r.b.stops = append(r.b.stops, p.close)
	if !testkit.Within(30*time.Second, func() bool {
		var list struct {
			Items []struct{ PublicationID, State string }
		}
		deviceCall(r.b.api, token, "GET", r.device()+"/publications", nil, &list)
		for _, it := range list.Items {
			if it.PublicationID == pub.PublicationID && it.State == "Active" {
				return true
			}
		}
		return false
	}) {
		return "", fmt.Errorf("%s's publication was not Active within 30 s", name)
	}
	return pub.PublicationID, nil
}

// joinTimes is one participant's way from its ticket to the first frame.
type joinTimes struct {
	join, subscribe, offer, whep, ice, dtls, frame, total time.Duration
}

// phases names joinTimes' fields in order, for the report.
var phases = []struct {
	name, what string
	get        func(joinTimes) time.Duration
}{
	{"join", "POST join with the ticket, answered with the participant token", func(j joinTimes) time.Duration { return j.join }},
	{"subscribe", "POST subscriptions, answered with the WHEP URL", func(j joinTimes) time.Duration { return j.subscribe }},
	{"offer", "pion creates its offer (audio and video, receive only) and gathers its candidates", func(j joinTimes) time.Duration { return j.offer }},
	{"WHEP", "POST of the offer to the room's WHEP URL (the control node checks the token and relays it to the engine, " +
		"which asks the control node about the ticket) until the answer is applied", func(j joinTimes) time.Duration { return j.whep }},
	{"ICE", "until pion's ICE is connected", func(j joinTimes) time.Duration { return j.ice }},
	{"DTLS", "until the DTLS handshake is done (peer connection connected)", func(j joinTimes) time.Duration { return j.dtls }},
	{"first frame", "until the last packet of the first complete IDR frame", func(j joinTimes) time.Duration { return j.frame }},
	{"total", "ticket in hand to first frame", func(j joinTimes) time.Duration { return j.total }},
}

// joinResult is the joins' measurement.
type joinResult struct {
	times []joinTimes
	load  string
}

// measureJoins publishes one participant's clip and times n new
// participants, one after another, from their ticket to the first frame
// of that publication over WHEP.
func (r *room) measureJoins(c *clip, n int) (joinResult, error) {
	pub, err := r.addPublisher(c, "presenter")
	if err != nil {
		return joinResult{}, err
	}
	r.pub = pub
	time.Sleep(3 * time.Second) // the engine's GOP cache fills
	var res joinResult
	for i := 0; i < n; i++ {
		tk, err := r.ticket(fmt.Sprintf("viewer-%d", i), "publications.subscribe")
		if err != nil {
			return res, err
		}
		jt, err := r.timeJoin(tk)
		if err != nil {
			return res, fmt.Errorf("join %d: %w", i+1, err)
		}
		res.times = append(res.times, jt)
		if (i+1)%10 == 0 {
			fmt.Fprintf(os.Stderr, "   %d joins, last %s ms\n", i+1, ms(jt.total))
		}
	}
	res.load = loadAverage()
	return res, nil
}

// timeJoin is one new participant: join, subscribe, WHEP, first frame;
// then it releases its session and leaves.
func (r *room) timeJoin(ticket string) (joinTimes, error) {
	var jt joinTimes
	t0 := time.Now()
	token, err := r.join(ticket)
	if err != nil {
		return jt, err
	}
	t1 := time.Now()
	defer deviceCall(r.b.api, token, "POST", r.device()+"/leave", nil, nil)
	var sub struct{ SubscriptionID, WhepURL string }
	if err := deviceCall(r.b.api, token, "POST", r.device()+"/subscriptions", map[string]any{"publicationId": r.pub}, &sub); err != nil {
		return jt, err
	}
	t2 := time.Now()
	pc, err := r.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return jt, err
	}
	defer pc.Close()
	var (
		mu                sync.Mutex
		iceAt, dtlsAt     time.Time
		frameAt           = make(chan time.Time, 1)
		connectionFailure = make(chan webrtc.PeerConnectionState, 1)
	)
	pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
		if s == webrtc.ICEConnectionStateConnected {
			mu.Lock()
			if iceAt.IsZero() {
				iceAt = time.Now()
			}
			mu.Unlock()
		}
	})
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		switch s {
		case webrtc.PeerConnectionStateConnected:
			mu.Lock()
			if dtlsAt.IsZero() {
				dtlsAt = time.Now()
			}
			mu.Unlock()
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			select {
			case connectionFailure <- s:
			default:
			}
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		if tr.Kind() != webrtc.RTPCodecTypeVideo {
			for {
				if _, _, err := tr.ReadRTP(); err != nil {
					return
				}
			}
		}
		var f firstFrame
		done := false
		for {
			p, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			if !done && f.add(p.SequenceNumber, p.Timestamp, p.Marker, p.Payload) {
				done = true
				frameAt <- time.Now()
			}
		}
	})
	for _, kind := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if _, err := pc.AddTransceiverFromKind(kind, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			return jt, err
		}
	}
	offer, err := gatheredOffer(pc)
	if err != nil {
		return jt, err
	}
	t3 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, location, err := postSDP(ctx, r.url(sub.WhepURL), token, offer)
	if err != nil {
		return jt, err
	}
	if location != "" {
		defer deleteSession(r.url(location), token)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		return jt, err
	}
	t4 := time.Now()
	var tf time.Time
	select {
	case tf = <-frameAt:
	case s := <-connectionFailure:
		return jt, fmt.Errorf("the peer connection is %s", s)
	case <-time.After(20 * time.Second):
		return jt, errors.New("no complete IDR frame within 20 s")
	}
	mu.Lock()
	ice, dtls := iceAt, dtlsAt
	mu.Unlock()
	// pion reports its states from goroutines of their own, which may run
	// after the first packets were read: each phase ends no later than
	// the next.
	if ice.IsZero() || ice.After(tf) {
		ice = tf
	}
	if dtls.IsZero() || dtls.After(tf) {
		dtls = tf
	}
	if ice.Before(t4) {
		ice = t4
	}
	if dtls.Before(ice) {
		dtls = ice
	}
	jt = joinTimes{join: t1.Sub(t0), subscribe: t2.Sub(t1), offer: t3.Sub(t2), whep: t4.Sub(t3), ice: ice.Sub(t4), dtls: dtls.Sub(ice),
		frame: tf.Sub(dtls), total: tf.Sub(t0)}
	return jt, nil
}
