package rtc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// mtu is the RTP packet size sent to browsers: less than the usual 1400
// to leave room for SRTP's tag and a TURN relay's headers.
const mtu = 1200

// connectTimeout ends a session whose peer never completes ICE and DTLS.
const connectTimeout = 20 * time.Second

// keyframeInterval spaces the keyframe requests one viewer relays.
const keyframeInterval = 500 * time.Millisecond

// whepSession is one WHEP viewer: a hub reader of the stream packetised
// once for all viewers (rtpFormat), whose packets it sends to the peer
// under its own headers.
type whepSession struct {
	id    string
	srv   *Server
	p     media.Path
	pc    *webrtc.PeerConnection
	rd    *hub.Reader
	leave func()
	// sent counts the RTP bytes written to the peer (SRTP adds its tag).
	sent func(n int)
	// tracks is indexed by hub track id; nil for a track left out.
	tracks []*sendTrack
	notes  []string

	ctx       context.Context
	cancel    context.CancelFunc
	connected chan struct{}
	connOnce  sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup

	keyMu   sync.Mutex
	lastKey time.Time

	mu      sync.Mutex
	closing bool // set under mu once close waits for the goroutines
}

// sendTrack is one hub track on its way to the viewer: the rtpFormat
// packets of its frames, under the viewer's own RTP header.
type sendTrack struct {
	local *viewerTrack
	clock int64
	base  uint32 // the viewer's RTP time of the stream's time zero
	seq   uint16
	// header is reused for every packet: nothing keeps it once WriteRTP
	// returns (SRTP marshals it; the NACK responder copies its fields).
	header rtp.Header
}

// viewerTrack is a track of one viewer's peer connection. pion's
// TrackLocalStaticRTP picks the negotiated codec; its Write, which takes
// whole packets, is not used: the session writes each shared payload under
// its own header straight to the connection's stream.
type viewerTrack struct {
	*webrtc.TrackLocalStaticRTP
	bound atomic.Pointer[binding]
}

// binding is where a bound track writes, and as what.
type binding struct {
	out  webrtc.TrackLocalWriter
	ssrc uint32
	pt   uint8
}

// Bind picks the codec and keeps the stream to write to.
func (t *viewerTrack) Bind(ctx webrtc.TrackLocalContext) (webrtc.RTPCodecParameters, error) {
	codec, err := t.TrackLocalStaticRTP.Bind(ctx)
	if err != nil {
		return codec, err
	}
	t.bound.Store(&binding{out: ctx.WriteStream(), ssrc: uint32(ctx.SSRC()), pt: uint8(codec.PayloadType)})
	return codec, nil
}

// Unbind stops the writes.
func (t *viewerTrack) Unbind(ctx webrtc.TrackLocalContext) error {
	t.bound.Store(nil)
	return t.TrackLocalStaticRTP.Unbind(ctx)
}

func (s *whepSession) path() media.Path { return s.p }

// setup adds the tracks the viewer can take to pc, or fails with
// ErrNoCommonCodec when it can take none.
func (s *whepSession) setup(o *offer) error {
	s.tracks = make([]*sendTrack, len(s.rd.Tracks()))
	for _, t := range s.rd.Tracks() {
		capability, note := sendCapability(t, o)
		if note != "" {
			s.notes = append(s.notes, note)
			continue
		}
		static, err := webrtc.NewTrackLocalStaticRTP(capability, string(t.Kind()), "svc")
		if err != nil {
			return err
		}
		local := &viewerTrack{TrackLocalStaticRTP: static}
		sender, err := s.pc.AddTrack(local)
		if err != nil {
			return err
		}
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		s.tracks[t.ID] = &sendTrack{local: local, clock: int64(capability.ClockRate), base: binary.BigEndian.Uint32(rnd[:4]),
			seq: binary.BigEndian.Uint16(rnd[4:])}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.readRTCP(sender)
		}()
	}
	for _, st := range s.tracks {
		if st != nil {
			return nil
		}
	}
	return ErrNoCommonCodec
}

// start watches the connection and sends frames once it is up.
func (s *whepSession) start() {
	s.pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			s.connOnce.Do(func() { close(s.connected) })
		case webrtc.PeerConnectionStateFailed:
			s.close(errors.New("ICE or DTLS failed"))
		case webrtc.PeerConnectionStateClosed:
			s.close(nil)
		}
	})
	// The session is registered before start: a DELETE or the server's
	// Close may already have begun close, whose Wait this Add must not
	// race.
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.run()
	}()
}

func (s *whepSession) run() {
	t := time.NewTimer(connectTimeout)
	select {
	case <-s.connected:
		t.Stop()
	case <-t.C:
		s.close(errors.New("the peer did not connect within " + connectTimeout.String()))
		return
	case <-s.ctx.Done():
		t.Stop()
		return
	}
	s.requestKeyframe()
	var buf []*hub.Packet
	started := false
	for {
		var err error
		buf, err = s.rd.Next(s.ctx, buf[:0])
		if err != nil {
			s.close(err)
			return
		}
		from := 0
		if !started {
			// Start at the newest keyframe queued: the GOP cache and what
			// came while ICE and DTLS were set up.
			from = -1
			for i := len(buf) - 1; i >= 0; i-- {
				if buf[i].Keyframe {
					from = i
					break
				}
			}
			if from < 0 {
				clear(buf)
				continue
			}
			started = true
		}
		for i := from; i < len(buf); i++ {
			s.send(buf[i])
		}
		clear(buf)
	}
}

// send writes an rtpFormat packet's RTP packets under the viewer's headers.
// A write fails only when the connection is going away, which the
// connection state reports; the other tracks keep going until then.
func (s *whepSession) send(p *hub.Packet) {
	st := s.tracks[p.Frame.Track.ID]
	if st == nil {
		return
	}
	b := st.local.bound.Load()
	if b == nil {
		return
	}
	ts := st.base + uint32(int64(p.Frame.PTS)*st.clock/int64(time.Second))
	h := &st.header
	sent := 0
	for data := p.Data; ; {
		payload, marker, offset, rest, ok := nextPacket(data)
		if !ok {
			break
		}
		data = rest
		*h = rtp.Header{Version: 2, Marker: marker, PayloadType: b.pt, SequenceNumber: st.seq, Timestamp: ts + offset, SSRC: b.ssrc,
			Extensions: h.Extensions[:0]}
		st.seq++
		if _, err := b.out.WriteRTP(h, payload); err == nil {
			sent += rtpHeaderSize + len(payload)
		}
	}
	if sent > 0 {
		s.sent(sent)
	}
}

// readRTCP reads a sender's RTCP (which also runs the NACK responder
// and report interceptors) and relays keyframe requests to the source.
func (s *whepSession) readRTCP(sender *webrtc.RTPSender) {
	for {
		pkts, _, err := sender.ReadRTCP()
		if err != nil {
			return
		}
		for _, p := range pkts {
			switch p.(type) {
			case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
				s.requestKeyframe()
			}
		}
	}
}

// requestKeyframe asks the source for a keyframe, at most once per
// keyframeInterval for this viewer.
func (s *whepSession) requestKeyframe() {
	s.keyMu.Lock()
	if time.Since(s.lastKey) < keyframeInterval {
		s.keyMu.Unlock()
		return
	}
	s.lastKey = time.Now()
	s.keyMu.Unlock()
	s.rd.Stream().RequestKeyframe()
}

func (s *whepSession) addCandidates(f *candidateFragment) error {
	return addCandidates(s.pc, f)
}

func (s *whepSession) close(reason error) {
	s.closeOnce.Do(func() {
		s.cancel()
		s.leave()
		go func() {
			// pion's Close waits for its own goroutines, some of which may
			// be the caller (a state-change callback): close elsewhere.
			_ = s.pc.Close()
			s.mu.Lock()
			s.closing = true
			s.mu.Unlock()
			s.wg.Wait()
			s.srv.release(s.id, true)
		}()
		log := s.srv.log.Info
		if errorIsClosed(reason) {
			log = s.srv.log.Debug
		}
		log("WHEP session ended", zap.String("session", s.id), zap.String("stream", s.p.String()), zap.Uint64("frames", s.rd.Frames()),
			zap.Uint64("dropped", s.rd.Dropped()), zap.NamedError("reason", reason))
	})
}

// addCandidates trickles a fragment's candidates into pc.
func addCandidates(pc *webrtc.PeerConnection, f *candidateFragment) error {
	remote := pc.RemoteDescription()
	if remote == nil {
		return ErrSessionNotFound
	}
	if f.ufrag != "" && !sameUfrag(remote.SDP, f.ufrag) {
		return ErrICERestart
	}
	for _, c := range f.candidates {
		init := webrtc.ICECandidateInit{Candidate: c.candidate}
		if c.mid != "" {
			mid := c.mid
			init.SDPMid = &mid
		} else {
			zero := uint16(0)
			init.SDPMLineIndex = &zero
		}
		if err := pc.AddICECandidate(init); err != nil {
			return ErrInvalidFragment
		}
	}
	return nil
}

func sameUfrag(sdpText, ufrag string) bool {
	for _, line := range strings.Split(sdpText, "\n") {
		if strings.TrimSuffix(line, "\r") == "a=ice-ufrag:"+ufrag {
			return true
		}
	}
	return false
}
