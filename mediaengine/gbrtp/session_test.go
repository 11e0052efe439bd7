package gbrtp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// frameSink collects what a session publishes.
type frameSink struct {
	mu     sync.Mutex
	tracks []*media.Track
	frames []*media.Frame
}

func (k *frameSink) publish(tracks []*media.Track) (FrameWriter, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tracks = tracks
	return k, nil
}

func (k *frameSink) WriteFrame(f *media.Frame) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.frames = append(k.frames, f)
	return nil
}

// count returns frames per codec and whether the first video frame was a
// keyframe.
func (k *frameSink) count() (map[media.Codec]int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := map[media.Codec]int{}
	firstKey, seenVideo := false, false
	for _, f := range k.frames {
		n[f.Track.Codec]++
		if f.Track.Kind() == media.KindVideo && !seenVideo {
			seenVideo, firstKey = true, f.Keyframe
		}
	}
	return n, firstKey
}

func TestSessionReceivesGStreamerPSOverEachTransport(t *testing.T) {
	const ssrc = 100000001 // y=0100000001: GB/T 28181 SSRCs are ten decimal digits
	for _, tc := range []struct {
		name      Transport
		transport string
	}{{UDP, psrtp.UDP}, {TCPPassive, psrtp.TCPDial}, {TCPActive, psrtp.TCPListen}} {
		t.Run(string(tc.name), func(t *testing.T) {
			cfg := Config{Transport: tc.name, Listen: "127.0.0.1:0", SSRC: ssrc, Timeout: 20 * time.Second}
			var snd *psrtp.Sender
			if tc.name == TCPActive {
				snd = psrtp.Start(t, psrtp.Config{Transport: tc.transport, Addr: "127.0.0.1:0", SSRC: ssrc})
				cfg.Listen, cfg.Peer = "", snd.ListenAddr().String()
			}
			s, err := Listen(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if snd == nil {
				psrtp.Start(t, psrtp.Config{Transport: tc.transport, Addr: s.LocalAddr().String(), SSRC: ssrc})
			}
			sink := &frameSink{}
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background(), sink.publish) }()
			testkit.Eventually(t, 30*time.Second, "50 video and 20 audio frames", func() bool {
				n, _ := sink.count()
				return n[media.CodecH264] >= 50 && n[media.CodecAAC] >= 20
			})
			n, firstKey := sink.count()
			if !firstKey {
				t.Fatal("the first published video frame is not a keyframe")
			}
			sink.mu.Lock()
			tracks := sink.tracks
			sink.mu.Unlock()
			if len(tracks) != 2 || tracks[0].Width != 320 || tracks[0].Height != 240 || tracks[1].SampleRate != 44100 {
				t.Fatalf("tracks %v", tracks)
			}
			st := s.Stats()
			if st.WrongSSRC != 0 || st.Malformed != 0 || st.DroppedUnits != 0 || st.Resyncs != 0 {
				t.Fatalf("counters %+v", st)
			}
			t.Logf("frames %v, stats %+v", n, st)
			s.Close()
			if err := <-done; err != nil {
				t.Fatalf("Run after Close: %v", err)
			}
		})
	}
}

func TestSessionEndsWhenTheDeviceStopsSending(t *testing.T) {
	// The timeout also runs before the first packet: 5 s leaves the sender
	// (ffmpeg started by the test) time to begin on a loaded machine.
	s, err := Listen(Config{Transport: UDP, Listen: "127.0.0.1:0", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	snd := psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: s.LocalAddr().String(), SSRC: 7})
	sink := &frameSink{}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), sink.publish) }()
	testkit.Eventually(t, 30*time.Second, "frames", func() bool { n, _ := sink.count(); return n[media.CodecH264] > 10 })
	snd.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("Run = %v, want ErrTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session outlived its timeout")
	}
}

func TestSessionDropsWrongSSRCAndWrongSource(t *testing.T) {
	s, err := Listen(Config{Transport: UDP, Listen: "127.0.0.1:0", SSRC: 42, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sink := &frameSink{}
	go s.Run(context.Background(), sink.publish)
	t.Cleanup(s.Close)
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: s.LocalAddr().String(), SSRC: 43})
	testkit.Eventually(t, 30*time.Second, "packets of the wrong SSRC counted", func() bool { return s.Stats().WrongSSRC > 50 })
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: s.LocalAddr().String(), SSRC: 42})
	testkit.Eventually(t, 30*time.Second, "frames of the right SSRC", func() bool { n, _ := sink.count(); return n[media.CodecH264] > 10 })
	// A second sender with the right SSRC from another port is not the
	// device the first packet came from.
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: s.LocalAddr().String(), SSRC: 42})
	testkit.Eventually(t, 30*time.Second, "packets from another source counted", func() bool { return s.Stats().WrongSource > 50 })
	if n, _ := sink.count(); n[media.CodecH264] == 0 || s.Stats().Packets == 0 {
		t.Fatal("no frames")
	}
}

func TestSessionTCPPassiveReportsAHangUp(t *testing.T) {
	s, err := Listen(Config{Transport: TCPPassive, Listen: "127.0.0.1:0", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), (&frameSink{}).publish) }()
	c, err := net.Dial("tcp", s.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{0, 0, 0, 20, 0x80}) // a zero-length frame, then a frame cut short
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("Run = %v, want ErrTruncated", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no end")
	}
	if s.Stats().EmptyFrames != 1 {
		t.Fatalf("empty frames %d", s.Stats().EmptyFrames)
	}
}
