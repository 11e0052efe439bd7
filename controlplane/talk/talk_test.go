package talk

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// device is a UDP socket standing in for a device's speaker.
func device(t *testing.T) (*net.UDPConn, *atomic.Int64, chan rtp.Packet) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	got := make(chan rtp.Packet, 1000)
	go func() {
		buf := make([]byte, 1500)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			var p rtp.Packet
			if p.Unmarshal(append([]byte(nil), buf[:k]...)) == nil {
				n.Add(1)
				got <- p
			}
		}
	}()
	return c, &n, got
}

func establish(addr string, pt int) Establisher {
	return func(ctx context.Context, open func(Remote) (string, int, error)) (Remote, error) {
		r := Remote{Addr: addr, PayloadType: pt, SSRC: 42, Ref: "call-1"}
		_, _, err := open(r)
		return r, err
	}
}

func TestSenderPacesAudioThroughThePushToTalkGate(t *testing.T) {
	c, n, got := device(t)
	s := &Service{BindIP: "127.0.0.1"}
	t.Cleanup(s.Close)
	sess, err := s.Create(context.Background(), "test", "dev", "ch", true, establish(c.LocalAddr().String(), 0))
	if err != nil || sess.Codec != CodecPCMU || sess.MediaState != MediaSending {
		t.Fatalf("%+v %v", sess, err)
	}
	// Half a second of audio takes about half a second to go out.
	start := time.Now()
	if _, err := s.Write(sess.SessionID, make([]byte, 4000)); err != nil {
		t.Fatal(err)
	}
	var last rtp.Packet
	for i := 0; i < 25; i++ {
		p := <-got
		if p.PayloadType != 0 || p.SSRC != 42 || len(p.Payload) != frameBytes || (i > 0 && p.SequenceNumber != last.SequenceNumber+1) {
			t.Fatalf("packet %d: %+v", i, p.Header)
		}
		last = p
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 2*time.Second {
		t.Fatalf("25 packets in %s, want about 500 ms", d)
	}
	// Closed gate: what waits is dropped, new audio refused.
	if _, err := s.Write(sess.SessionID, make([]byte, 8000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(sess.SessionID, make([]byte, MaxBuffered)); !errors.Is(err, ErrBufferFull) {
		t.Fatalf("more than MaxBuffered: %v", err)
	}
	if _, err := s.SetPTT(sess.SessionID, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	before := n.Load()
	if _, err := s.Write(sess.SessionID, make([]byte, 160)); !errors.Is(err, ErrNotSending) {
		t.Fatalf("write with the gate closed: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if after := n.Load(); after != before {
		t.Fatalf("%d packets with the gate closed", after-before)
	}
	// The device hangs up: its media is released.
	s.ReleaseByRef("call-1", "the device hung up (BYE)")
	g, err := s.Get(sess.SessionID)
	if err != nil || g.MediaState != MediaReleased || g.ReleasedAt == nil || g.ReleaseReason != "the device hung up (BYE)" {
		t.Fatalf("%+v %v", g, err)
	}
	if _, err := s.Write(sess.SessionID, make([]byte, 160)); !errors.Is(err, ErrNotSending) {
		t.Fatalf("write after release: %v", err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

// TestReleaseDeviceStopsOnlyItsSessions: a device gone offline has its
// sessions' media released with the reason; another device's session
// goes on sending.
func TestReleaseDeviceStopsOnlyItsSessions(t *testing.T) {
	c, _, _ := device(t)
	s := &Service{BindIP: "127.0.0.1"}
	t.Cleanup(s.Close)
	gone, err := s.Create(context.Background(), "gb28181", "dev-1", "ch", true, establish(c.LocalAddr().String(), 8))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Create(context.Background(), "gb28181", "dev-2", "ch", true, establish(c.LocalAddr().String(), 8))
	if err != nil {
		t.Fatal(err)
	}
	s.ReleaseDevice("onvif", "dev-1", "wrong protocol")
	s.ReleaseDevice("gb28181", "dev-1", "GB28181 device dev-1 went offline")
	if g, err := s.Get(gone.SessionID); err != nil || g.MediaState != MediaReleased || g.ReleaseReason != "GB28181 device dev-1 went offline" {
		t.Fatalf("the offline device's session: %+v %v", g, err)
	}
	if g, err := s.Get(other.SessionID); err != nil || g.MediaState != MediaSending || g.ReleaseReason != "" {
		t.Fatalf("the other device's session: %+v %v", g, err)
	}
}

// TestReleaseAllStopsEverySenderOnce: a node cut off from the cluster
// releases every session it still sends, each told to Record once with
// the reason; a session released before keeps its own end.
func TestReleaseAllStopsEverySenderOnce(t *testing.T) {
	c, _, _ := device(t)
	var mu sync.Mutex
	recorded := map[string]Session{}
	s := &Service{BindIP: "127.0.0.1", Record: func(sess Session) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := recorded[sess.SessionID]; dup {
			t.Errorf("%s recorded twice", sess.SessionID)
		}
		recorded[sess.SessionID] = sess
	}}
	t.Cleanup(s.Close)
	var ids []string
	for _, dev := range []string{"dev-1", "dev-2", "dev-3"} {
		sess, err := s.Create(context.Background(), "gb28181", dev, "ch", true, establish(c.LocalAddr().String(), 8))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.SessionID)
	}
	if _, err := s.ReleaseMedia(ids[0]); err != nil {
		t.Fatal(err)
	}
	s.ReleaseAll("control node a was cut off from the cluster")
	s.ReleaseAll("again")
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		want := "control node a was cut off from the cluster"
		if i == 0 {
			want = "released through the API"
		}
		if r := recorded[id]; r.MediaState != MediaReleased || r.ReleaseReason != want {
			t.Fatalf("session %d recorded %+v", i, r)
		}
		if _, err := s.Write(id, make([]byte, frameBytes)); !errors.Is(err, ErrNotSending) {
			t.Fatalf("session %d takes audio: %v", i, err)
		}
	}
}
