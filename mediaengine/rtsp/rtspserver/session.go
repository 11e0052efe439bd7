package rtspserver

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// serverSession is one RTSP session: a publisher (ANNOUNCE ... RECORD) or
// a player (DESCRIBE ... PLAY). Its connection's goroutine owns it; the
// UDP readers (publish over UDP) and the play goroutine touch only what mu
// guards or what is fixed before they start.
type serverSession struct {
	id         SessionID
	srv        *Server
	conn       *serverConn
	path       media.Path
	query      url.Values
	user       string
	publishing bool
	startedAt  time.Time
	baseURL    *url.URL // the ANNOUNCE or DESCRIBE URL
	tracks     []*sessionTrack
	announced  bool // Session header sent (after the first SETUP)
	tcp        bool
	udp        bool

	writer    FrameWriter
	recording bool
	clock     *rtpcodec.StreamClock

	source     FrameSource
	playCancel context.CancelFunc
	playDone   chan struct{}
	// The play origin: the first frame's PTS and when it was sent. It
	// survives PAUSE so RTP time continues after a resumed PLAY.
	playStarted bool
	origin      time.Duration
	wallOrigin  time.Time

	bytes        atomic.Uint64
	lastActivity atomic.Int64 // unix nanoseconds of the last UDP packet

	mu     sync.Mutex // guards depacketising from the UDP reader, tcp/udp and closed
	closed bool
	once   sync.Once
	err    error // why a publish ended from the writer's side
}

func newServerSession(c *serverConn, path media.Path, base *url.URL) *serverSession {
	return &serverSession{
		id: SessionID(newID(8)), srv: c.srv, conn: c, path: path, query: base.Query(),
		user: c.user, startedAt: time.Now(), baseURL: base,
	}
}

func (s *serverSession) info() SessionInfo {
	info := SessionInfo{ID: s.id, Path: s.path.String(), Publishing: s.publishing, Transport: "tcp",
		ClientAddr: s.conn.conn.RemoteAddr().String(), User: s.user, StartedAt: s.startedAt, Bytes: s.bytes.Load()}
	s.mu.Lock() // SETUP and RECORD may be changing what is read here
	defer s.mu.Unlock()
	if s.udp {
		info.Transport = "udp"
	}
	for _, t := range s.tracks {
		if t.depack != nil {
			st := t.depack.Stats()
			info.LostPackets += st.Lost.Load()
			info.DroppedFrames += st.Dropped.Load()
		}
	}
	return info
}

// trackForURL finds the track a SETUP URL names.
func (s *serverSession) trackForURL(u *url.URL) *sessionTrack {
	for _, t := range s.tracks {
		want, err := rtsp.ResolveControl(s.baseURL, t.control)
		if err != nil {
			continue
		}
		if strings.TrimSuffix(want.Path, "/") == strings.TrimSuffix(u.Path, "/") {
			return t
		}
	}
	// A lone track may be set up by the aggregate URL.
	if len(s.tracks) == 1 && strings.TrimSuffix(u.Path, "/") == strings.TrimSuffix(s.baseURL.Path, "/") {
		return s.tracks[0]
	}
	return nil
}

// startRecording builds the depacketisers once the publisher sent RECORD.
func (s *serverSession) startRecording() error {
	s.mu.Lock() // the UDP readers look at the depacketisers
	defer s.mu.Unlock()
	s.clock = rtpcodec.NewStreamClock()
	for _, t := range s.tracks {
		if !t.setup || t.track == nil {
			continue // not set up, or a format the engine does not carry
		}
		d, err := rtpcodec.NewDepacketizer(t.format, t.track, s.clock, s.writeFrame)
		if err != nil {
			return err
		}
		t.depack = d
		if s.udp {
			t.reorder = rtpcodec.NewReorderBuffer(64, 100*time.Millisecond)
			t.deliver = t.decode
		}
	}
	s.recording = true
	return nil
}

// writeFrame hands a depacketised frame to the publisher's writer; an
// error from it ends the session.
func (s *serverSession) writeFrame(f *media.Frame) {
	if s.err != nil {
		return
	}
	if err := s.writer.WriteFrame(f); err != nil {
		s.err = err
		s.srv.log.Info("rtsp publish refused by the stream", zap.String("session", string(s.id)), zap.Error(err))
		s.conn.conn.Close()
	}
}

// interleaved handles a frame on the RTSP connection.
func (s *serverSession) interleaved(ch int, payload []byte, now time.Time) {
	for _, t := range s.tracks {
		if !t.setup || !s.tcp {
			continue
		}
		switch ch {
		case t.channel:
			if s.publishing && s.recording && t.depack != nil {
				s.bytes.Add(uint64(len(payload)))
				t.decode(payload, now)
			}
			return
		case t.channel + 1:
			s.rtcpPacket(t, payload, now)
			return
		}
	}
}

// udpPacket handles a packet the UDP reader routed to this session.
func (s *serverSession) udpPacket(track int, isRTCP bool, raw []byte, now time.Time) {
	s.lastActivity.Store(now.UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || track >= len(s.tracks) {
		return
	}
	t := s.tracks[track]
	if isRTCP {
		s.rtcpPacket(t, raw, now)
		return
	}
	if s.publishing && s.recording && t.reorder != nil {
		s.bytes.Add(uint64(len(raw)))
		t.reorder.Push(raw, now, t.deliver)
	}
}

// rtcpPacket takes sender reports from a publisher (they align its
// tracks); a player's receiver reports only show it is alive.
func (s *serverSession) rtcpPacket(t *sessionTrack, raw []byte, now time.Time) {
	if !s.publishing || t.depack == nil {
		return
	}
	rtsp.ForSenderReports(raw, func(sr *rtcp.SenderReport) {
		t.depack.SenderReport(rtsp.NTPTime(sr.NTPTime), sr.RTPTime, now)
	})
}

// startPlay starts the goroutine that sends the source's frames.
func (s *serverSession) startPlay() {
	ctx, cancel := context.WithCancel(s.srv.ctx)
	s.playCancel = cancel
	s.playDone = make(chan struct{})
	go func() {
		defer close(s.playDone)
		// play returns only when it failed or ctx ended.
		if err := s.play(ctx); ctx.Err() == nil {
			s.srv.log.Info("rtsp play ended", zap.String("session", string(s.id)), zap.Error(err))
			s.conn.conn.Close()
		}
	}()
}

func (s *serverSession) stopPlay() {
	if s.playCancel != nil {
		s.playCancel()
		<-s.playDone
		s.playCancel = nil
	}
}

// play sends frames until the source ends, the context ends or a write
// fails.
func (s *serverSession) play(ctx context.Context) error {
	byTrack := map[*media.Track]*sessionTrack{}
	for _, t := range s.tracks {
		if t.setup {
			byTrack[t.track] = t
		}
	}
	var sendErr error
	var current *sessionTrack
	sendTCP := func(pkt []byte) error {
		s.conn.writeInterleaved(current.channel, pkt)
		s.bytes.Add(uint64(len(pkt)))
		return nil
	}
	sendUDP := func(pkt []byte) error {
		_, err := s.srv.udp.rtp.WriteToUDPAddrPort(pkt, current.clientRTP)
		s.bytes.Add(uint64(len(pkt)))
		return err
	}
	send := sendUDP
	if s.tcp {
		send = sendTCP
	}
	// Over TCP, audio frames wait (at most cfg.WriteBatch) to go out in
	// one write with the next video frame: a third of the system calls
	// per player for a 25 fps stream with 48 kHz AAC.
	hasVideo, batch := false, s.srv.cfg.WriteBatch
	for _, t := range s.tracks {
		hasVideo = hasVideo || (t.setup && t.track.Kind() == media.KindVideo && batch > 0)
	}
	var lastFlush, lastDeadline time.Time
	for {
		f, err := s.source.Next(ctx)
		if err != nil {
			return err
		}
		t := byTrack[f.Track]
		if t == nil {
			// A source may hand out frames of equivalent Track values
			// (after its input reconnected): match by ID.
			for _, x := range s.tracks {
				if x.setup && x.track.ID == f.Track.ID && x.track.Codec == f.Track.Codec {
					t = x
				}
			}
			if t == nil {
				continue
			}
		}
		now := time.Now()
		if !s.playStarted {
			s.origin, s.wallOrigin, s.playStarted = f.PTS, now, true
		}
		ts := t.rtpTime(f.PTS, s.origin)
		if !t.sent || now.Sub(t.lastSR) >= rtsp.ReportInterval {
			s.senderReport(t, s.wallOrigin.Add(f.PTS-s.origin), ts, now)
		}
		t.sent, t.lastTS, t.lastPTS = true, ts, f.PTS
		current = t
		if s.tcp {
			s.conn.lock()
			// The deadline moves only every quarter of WriteTimeout: a
			// timer update per frame and player is measurable at scale.
			if now.Sub(lastDeadline) > s.srv.cfg.WriteTimeout/4 {
				s.conn.conn.SetWriteDeadline(now.Add(s.srv.cfg.WriteTimeout))
				lastDeadline = now
			}
		}
		sendErr = t.packetizer.Packetize(f, ts, send)
		if s.tcp {
			if sendErr == nil && (!hasVideo || f.Track.Kind() == media.KindVideo || now.Sub(lastFlush) >= batch) {
				sendErr = s.conn.bw.Flush()
				lastFlush = now
			}
			s.conn.unlock()
		}
		if sendErr != nil {
			return sendErr
		}
	}
}

// senderReport sends an RTCP SR for t: wall time ntp is RTP time ts.
func (s *serverSession) senderReport(t *sessionTrack, ntp time.Time, ts uint32, now time.Time) {
	t.lastSR = now
	packets, octets := t.packetizer.Counts()
	sr := rtcp.SenderReport{SSRC: t.ssrc, NTPTime: rtsp.ToNTP(ntp), RTPTime: ts, PacketCount: packets, OctetCount: octets}
	b, err := sr.Marshal()
	if err != nil {
		return
	}
	if s.tcp {
		s.conn.lock()
		s.conn.writeInterleaved(t.channel+1, b)
		s.conn.unlock()
		return
	}
	s.srv.udp.rtcp.WriteToUDPAddrPort(b, t.clientRTCP)
}

// rtpInfo is the RTP-Info header of the PLAY response.
func (s *serverSession) rtpInfo() string {
	var parts []string
	for _, t := range s.tracks {
		if !t.setup {
			continue
		}
		u, err := rtsp.ResolveControl(s.baseURL, t.control)
		if err != nil {
			continue
		}
		u.RawQuery = ""
		parts = append(parts, "url="+u.String()+";seq="+strconv.Itoa(int(t.packetizer.NextSequence()))+";rtptime="+strconv.FormatUint(uint64(t.tsBase), 10))
	}
	return strings.Join(parts, ",")
}

// close ends the session: the play goroutine stops, the source or writer
// is closed, the UDP routes go.
func (s *serverSession) close() {
	s.once.Do(func() {
		s.stopPlay()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.srv.unregister(s)
		if s.source != nil {
			s.source.Close()
		}
		if s.writer != nil {
			s.writer.Close()
		}
		s.srv.log.Debug("rtsp session closed", zap.String("session", string(s.id)), zap.String("path", s.path.String()))
	})
}

// alive reports whether UDP traffic showed the peer alive within d.
func (s *serverSession) alive(d time.Duration, now time.Time) bool {
	last := s.lastActivity.Load()
	return s.udp && last != 0 && now.Sub(time.Unix(0, last)) < d
}
