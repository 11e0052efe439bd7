package rtc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// whipSession is one WHIP publisher: the peer's tracks are depacketised
// into a hub stream, as an RTSP publisher's are.
type whipSession struct {
	id  string
	srv *Server
	p   media.Path
	pc  *webrtc.PeerConnection
	pub *hub.Publisher
	// received counts the RTP bytes the peer sent (its flow); leave ends
	// the flow, once the tracks' readers have stopped.
	received func(n int)
	leave    func()
	// formats are the negotiated formats of the stream's tracks, by kind.
	formats map[webrtc.RTPCodecType]whipTrack
	clock   *rtpcodec.StreamClock

	ctx       context.Context
	cancel    context.CancelFunc
	connected chan struct{}
	connOnce  sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu        sync.Mutex
	closing   bool // set under mu once close waits for the readers
	videoSSRC uint32

	// decodeMu serialises the depacketisers of all the peer's tracks:
	// they share the stream clock, and a video track's parameter sets,
	// filled in as they arrive, are read by every write to the stream.
	decodeMu sync.Mutex
}

// whipTrack is one negotiated media section of a publisher.
type whipTrack struct {
	format rtpcodec.Format
	track  *media.Track
}

func (s *whipSession) path() media.Path { return s.p }

// negotiatedTracks reads the stream's tracks from the server's answer: for
// each media section it kept, the first format, which the sender uses
// (or another format of the same codec: see start), if the offer had it: pion
// answers a section whose codecs it could not match with its own list.
// H.264 parameter sets come in-band; the stream is ready at the first
// keyframe with them.
func negotiatedTracks(o *offer, answerSDP string) (map[webrtc.RTPCodecType]whipTrack, []*media.Track, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(answerSDP); err != nil {
		return nil, nil, fmt.Errorf("rtc: own answer: %w", err)
	}
	out := map[webrtc.RTPCodecType]whipTrack{}
	var tracks []*media.Track
	for _, md := range sd.MediaDescriptions {
		kind := webrtc.NewRTPCodecType(md.MediaName.Media)
		if md.MediaName.Port.Value == 0 || len(md.MediaName.Formats) == 0 || kind == 0 {
			continue
		}
		if _, dup := out[kind]; dup {
			return nil, nil, &Error{400, "invalid_sdp", "a WHIP offer has at most one audio and one video section"}
		}
		first := md.MediaName.Formats[0]
		pt, err := strconv.Atoi(first)
		if err != nil {
			continue
		}
		var name string
		var clockRate, channels int
		for _, a := range md.Attributes {
			if v, ok := strings.CutPrefix(a.Value, first+" "); ok && a.Key == "rtpmap" {
				parts := strings.Split(v, "/")
				name = strings.ToUpper(parts[0])
				if len(parts) > 1 {
					clockRate, _ = strconv.Atoi(parts[1])
				}
				channels = 1
				if len(parts) > 2 {
					channels, _ = strconv.Atoi(parts[2])
				}
			}
		}
		if !o.offers(md.MediaName.Media, name) {
			continue
		}
		t := &media.Track{ClockRate: clockRate}
		switch name {
		case "H264":
			t.Codec = media.CodecH264
		case "VP8":
			t.Codec = media.CodecVP8
		case "OPUS":
			t.Codec, t.SampleRate, t.Channels = media.CodecOpus, 48000, 2
		case "PCMU", "PCMA":
			t.Codec, t.SampleRate, t.Channels = media.Codec(name), clockRate, channels
		default:
			continue
		}
		out[kind] = whipTrack{format: rtpcodec.Format{PayloadType: uint8(pt), EncodingName: name, ClockRate: clockRate, Channels: channels}, track: t}
	}
	// Video first, as every other input orders its tracks.
	for _, k := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeVideo, webrtc.RTPCodecTypeAudio} {
		if wt, ok := out[k]; ok {
			wt.track.ID = len(tracks)
			tracks = append(tracks, wt.track)
		}
	}
	if len(tracks) == 0 {
		return nil, nil, ErrNoCommonCodec
	}
	return out, tracks, nil
}

// start reads the peer's tracks into the stream once they arrive, and
// ends the session with the connection or the stream.
func (s *whipSession) start() {
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
	s.pc.OnTrack(func(remote *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
		wt, ok := s.formats[remote.Kind()]
		if !ok {
			return
		}
		// A sender may use another format of the answer's section than the
		// first: pion sends H.264 in the first one whose parameters fit its
		// track (another profile or packetization mode). The same codec
		// under another payload type is the same track; another codec is
		// not what the stream was published with.
		if c := remote.Codec(); uint8(c.PayloadType) != wt.format.PayloadType {
			_, name, _ := strings.Cut(c.MimeType, "/")
			if !strings.EqualFold(name, wt.format.EncodingName) || c.ClockRate != uint32(wt.format.ClockRate) {
				s.close(fmt.Errorf("the peer sends %s on payload type %d, not the answer's %s", c.MimeType, c.PayloadType, wt.format.EncodingName))
				return
			}
			wt.format.PayloadType = uint8(c.PayloadType)
		}
		if remote.Kind() == webrtc.RTPCodecTypeVideo {
			s.mu.Lock()
			s.videoSSRC = uint32(remote.SSRC())
			s.mu.Unlock()
			s.requestKeyframe()
		}
		depack, err := rtpcodec.NewDepacketizer(wt.format, wt.track, s.clock, s.writeFrame)
		if err != nil {
			s.close(err)
			return
		}
		d := &lockedDepacketizer{mu: &s.decodeMu, d: depack}
		// A track can arrive while the session closes: its readers are
		// counted only if close has not begun, and close waits for the
		// lock to mark it closing before it waits for the readers (an Add racing a Wait on
		// an empty group is a misuse the race detector reports).
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return
		}
		s.wg.Add(2)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.readTrack(remote, wt, d)
		}()
		go func() {
			defer s.wg.Done()
			readReports(receiver, d)
		}()
	})
	s.pub.OnKeyframeRequest(s.requestKeyframe)
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
		t := time.NewTimer(connectTimeout)
		defer t.Stop()
		select {
		case <-s.connected:
		case <-t.C:
			s.close(errors.New("the peer did not connect within " + connectTimeout.String()))
			return
		case <-s.ctx.Done():
			return
		}
		select {
		case <-s.pub.Done():
			s.close(errors.New("the stream was closed"))
		case <-s.ctx.Done():
		}
	}()
}

// lockedDepacketizer shares a track's depacketiser between its RTP reader
// and its RTCP reader, under the session's decode lock.
type lockedDepacketizer struct {
	mu *sync.Mutex
	d  rtpcodec.Depacketizer
}

// readTrack depacketises one of the peer's tracks into the stream,
// putting retransmitted packets back in order.
func (s *whipSession) readTrack(remote *webrtc.TrackRemote, wt whipTrack, d *lockedDepacketizer) {
	reorder := rtpcodec.NewReorderBuffer(128, 200*time.Millisecond)
	var pkt rtp.Packet
	deliver := func(raw []byte, arrival time.Time) {
		if pkt.Unmarshal(raw) != nil || pkt.PayloadType != wt.format.PayloadType {
			return
		}
		_ = d.d.Decode(&pkt, arrival) // a damaged unit is counted and skipped
	}
	buf := make([]byte, 1500)
	for {
		n, _, err := remote.Read(buf)
		if err != nil {
			return
		}
		s.received(n)
		d.mu.Lock()
		reorder.Push(buf[:n], time.Now(), deliver)
		d.mu.Unlock()
	}
}

// readReports feeds a track's RTCP sender reports to its depacketiser, so
// audio and video share one time origin, and keeps pion's receiver
// interceptors running.
func readReports(receiver *webrtc.RTPReceiver, d *lockedDepacketizer) {
	for {
		pkts, _, err := receiver.ReadRTCP()
		if err != nil {
			return
		}
		now := time.Now()
		for _, p := range pkts {
			if sr, ok := p.(*rtcp.SenderReport); ok {
				d.mu.Lock()
				d.d.SenderReport(ntpTime(sr.NTPTime), sr.RTPTime, now)
				d.mu.Unlock()
			}
		}
	}
}

// ntpTime converts a 64-bit NTP timestamp.
func ntpTime(v uint64) time.Time {
	const ntpEpochOffset = 2208988800
	secs := int64(v>>32) - ntpEpochOffset
	frac := int64(v & 0xffffffff)
	return time.Unix(secs, frac*1e9>>32)
}

func (s *whipSession) writeFrame(f *media.Frame) {
	if err := s.pub.WriteFrame(f); err != nil && !errors.Is(err, hub.ErrStreamClosed) {
		s.srv.log.Info("WHIP frame refused by the stream", zap.String("session", s.id), zap.Error(err))
	}
}

// requestKeyframe sends a PLI for the peer's video.
func (s *whipSession) requestKeyframe() {
	s.mu.Lock()
	ssrc := s.videoSSRC
	s.mu.Unlock()
	if ssrc == 0 {
		return
	}
	_ = s.pc.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: ssrc}})
}

func (s *whipSession) addCandidates(f *candidateFragment) error { return addCandidates(s.pc, f) }

func (s *whipSession) close(reason error) {
	s.closeOnce.Do(func() {
		s.cancel()
		s.pub.Close()
		go func() {
			_ = s.pc.Close()
			s.mu.Lock()
			s.closing = true // no track counts readers after this
			s.mu.Unlock()
			s.wg.Wait()
			s.leave()
			s.srv.release(s.id, true)
		}()
		log := s.srv.log.Info
		if errorIsClosed(reason) {
			log = s.srv.log.Debug
		}
		log("WHIP session ended", zap.String("session", s.id), zap.String("stream", s.p.String()), zap.NamedError("reason", reason))
	})
}
