package gbrtp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/ps"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// Transport is how the device's RTP reaches the engine.
type Transport string

// Transports, named as the contract's SDP setup roles are seen from the
// engine.
const (
	UDP Transport = "udp"
	// TCPPassive: the engine listens and the device connects (a=setup:passive
	// in the platform's offer).
	TCPPassive Transport = "tcp-passive"
	// TCPActive: the engine connects to the device (a=setup:active).
	TCPActive Transport = "tcp-active"
)

// Defaults of Config.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultReadyWait = 2 * time.Second
	reorderPackets   = 128
	reorderDelay     = 150 * time.Millisecond
	maxUDPPacket     = 1 << 16
)

// Config describes one receiving session.
type Config struct {
	Transport Transport
	// Listen is the local address (the leased port) for UDP and
	// TCPPassive, and the address to dial from for TCPActive (may be
	// empty then).
	Listen string
	// Peer is the device's media address that TCPActive dials.
	Peer string
	// SSRC is the y= value of the INVITE; packets with another SSRC are
	// dropped. 0 accepts the SSRC of the first packet.
	SSRC uint32
	// Timeout ends the session when no packet arrives for so long;
	// default DefaultTimeout.
	Timeout time.Duration
	// ReadyWait is how long publication waits for every track to be
	// described once video can start; default DefaultReadyWait.
	ReadyWait time.Duration
}

// FrameWriter takes the frames of the published stream; *hub.Publisher
// is one.
type FrameWriter interface {
	WriteFrame(f *media.Frame) error
}

// PublishFunc opens the stream once its tracks are known.
type PublishFunc func(tracks []*media.Track) (FrameWriter, error)

// Stats are a session's counters, safe to read while it runs.
type Stats struct {
	Packets, Bytes  uint64
	WrongSSRC       uint64 // dropped: another SSRC than the INVITE's
	WrongSource     uint64 // dropped: another source address than the first packet's
	Malformed       uint64 // dropped: not RTP
	Lost            uint64 // sequence gaps
	Frames          uint64 // frames written to the stream
	DroppedFrames   uint64 // frames of tracks not published
	EmptyFrames     uint64 // zero-length RFC 4571 frames
	Resyncs, Units  uint64 // program stream demuxer
	DroppedUnits    uint64
	UnrecognisedESs uint64
}

// Session is one RTP receiving session on one port.
type Session struct {
	cfg    Config
	udp    *net.UDPConn
	ln     net.Listener
	local  net.Addr
	closed chan struct{}
	once   sync.Once

	mu   sync.Mutex // guards conn and local
	conn net.Conn

	packets, bytes, wrongSSRC, wrongSource, malformed, lost atomic.Uint64
	frames, droppedFrames, empty                            atomic.Uint64
	resyncs, units, droppedUnits, unrecognised              atomic.Uint64

	// Owned by the goroutine in Run.
	ssrc      uint32
	haveSSRC  bool
	nextSeq   uint16
	haveSeq   bool
	demux     *ps.Demuxer
	builder   *ps.FrameBuilder
	gate      publishGate
	out       FrameWriter
	publish   PublishFunc
	published []*media.Track
	scratch   []*media.Frame
	arrival   time.Time
	err       error
}

// Listen binds the session's port (UDP, TCPPassive) so that it is held
// from the moment the INVITE offers it; TCPActive binds nothing yet.
func Listen(cfg Config) (*Session, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ReadyWait <= 0 {
		cfg.ReadyWait = DefaultReadyWait
	}
	s := &Session{cfg: cfg, closed: make(chan struct{}), ssrc: cfg.SSRC, haveSSRC: cfg.SSRC != 0}
	switch cfg.Transport {
	case UDP:
		a, err := net.ResolveUDPAddr("udp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: listen %q: %w", ErrInvalidConfig, cfg.Listen, err)
		}
		if s.udp, err = net.ListenUDP("udp", a); err != nil {
			return nil, fmt.Errorf("gbrtp: %w", err)
		}
		s.udp.SetReadBuffer(udpReadBuffer)
		s.local = s.udp.LocalAddr()
	case TCPPassive:
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("gbrtp: %w", err)
		}
		s.ln, s.local = ln, ln.Addr()
	case TCPActive:
		if cfg.Peer == "" {
			return nil, fmt.Errorf("%w: tcp-active needs the device's address", ErrInvalidConfig)
		}
	default:
		return nil, fmt.Errorf("%w: transport %q is not udp, tcp-passive or tcp-active", ErrInvalidConfig, cfg.Transport)
	}
	return s, nil
}

// LocalAddr is the bound address (nil for TCPActive before it connects).
func (s *Session) LocalAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.local
}

// Close ends the session; Run returns.
func (s *Session) Close() {
	s.once.Do(func() {
		close(s.closed)
		if s.udp != nil {
			s.udp.Close()
		}
		if s.ln != nil {
			s.ln.Close()
		}
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
	})
}

// Stats returns the counters so far.
func (s *Session) Stats() Stats {
	return Stats{Packets: s.packets.Load(), Bytes: s.bytes.Load(), WrongSSRC: s.wrongSSRC.Load(), WrongSource: s.wrongSource.Load(),
		Malformed: s.malformed.Load(), Lost: s.lost.Load(), Frames: s.frames.Load(), DroppedFrames: s.droppedFrames.Load(),
		EmptyFrames: s.empty.Load(), Resyncs: s.resyncs.Load(), Units: s.units.Load(), DroppedUnits: s.droppedUnits.Load(),
		UnrecognisedESs: s.unrecognised.Load()}
}

// Run receives until ctx ends, Close is called, the timeout passes without
// a packet, the device hangs up (TCP) or the stream refuses a frame. It
// returns why; nil only for ctx or Close.
func (s *Session) Run(ctx context.Context, publish PublishFunc) error {
	s.publish = publish
	s.demux = ps.NewDemuxer(s.unit)
	s.builder = ps.NewFrameBuilder()
	s.gate.readyWait = s.cfg.ReadyWait
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	defer s.Close()
	var err error
	switch s.cfg.Transport {
	case UDP:
		err = s.runUDP()
	default:
		err = s.runTCP()
	}
	if s.err != nil {
		return s.err
	}
	select {
	case <-s.closed: // Close or ctx: an asked-for end
		return nil
	default:
	}
	return err
}

// deadline keeps a read deadline of Timeout after the last packet without
// resetting the timer for every packet.
type deadline struct {
	timeout time.Duration
	set     time.Time // when the current deadline was set
	last    time.Time // last packet
}

func (s *Session) runUDP() error {
	rd := newUDPReader(s.udp)
	reorder := rtpcodec.NewReorderBuffer(reorderPackets, reorderDelay)
	var source *net.UDPAddr
	dl := deadline{timeout: s.cfg.Timeout, set: time.Now(), last: time.Now()}
	s.udp.SetReadDeadline(dl.set.Add(dl.timeout))
	deliver := func(pkt []byte, arrival time.Time) {
		s.arrival = arrival
		s.packet(pkt)
	}
	for s.err == nil {
		n, err := rd.read()
		now := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if now.Sub(dl.last) < dl.timeout {
					dl.set = now
					s.udp.SetReadDeadline(dl.last.Add(dl.timeout))
					continue
				}
				reorder.Flush(deliver)
				return fmt.Errorf("%w (%s)", ErrTimeout, dl.timeout)
			}
			return fmt.Errorf("gbrtp: %w", err)
		}
		grow, accepted := false, false
		for i := 0; i < n && s.err == nil; i++ {
			pkt, from, truncated := rd.datagram(i)
			if truncated {
				s.malformed.Add(1)
				grow = true
				continue
			}
			h, _, ok := parseRTP(pkt)
			if !ok {
				s.malformed.Add(1)
				continue
			}
			if !s.acceptSSRC(h.ssrc) {
				continue
			}
			if source == nil {
				source = from
			} else if from == nil || !from.IP.Equal(source.IP) || from.Port != source.Port {
				s.wrongSource.Add(1)
				continue
			}
			dl.last, accepted = now, true
			reorder.Push(pkt, now, deliver)
		}
		if grow {
			rd.grow()
		}
		if accepted && now.Sub(dl.set) > dl.timeout/4 {
			dl.set = now
			s.udp.SetReadDeadline(now.Add(dl.timeout))
		}
	}
	return s.err
}

func (s *Session) runTCP() error {
	conn, err := s.connect()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	select {
	case <-s.closed:
		conn.Close()
		return nil
	default:
	}
	fr := NewFrameReader(conn)
	dl := deadline{timeout: s.cfg.Timeout, set: time.Now()}
	conn.SetReadDeadline(dl.set.Add(dl.timeout))
	for s.err == nil {
		pkt, err := fr.Next()
		s.empty.Store(fr.Empty)
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				return fmt.Errorf("%w (%s)", ErrTimeout, dl.timeout)
			case errors.Is(err, ErrTruncated):
				return err
			case errors.Is(err, net.ErrClosed):
				return nil
			}
			return fmt.Errorf("%w: %w", ErrPeerClosed, err)
		}
		now := time.Now()
		if now.Sub(dl.set) > dl.timeout/4 {
			dl.set = now
			conn.SetReadDeadline(now.Add(dl.timeout))
		}
		h, _, ok := parseRTP(pkt)
		if !ok {
			s.malformed.Add(1)
			continue
		}
		if !s.acceptSSRC(h.ssrc) {
			continue
		}
		s.arrival = now
		s.packet(pkt)
	}
	return s.err
}

// connect waits for the device's connection (TCPPassive, one only) or
// dials it (TCPActive, retrying until the timeout).
func (s *Session) connect() (net.Conn, error) {
	if s.cfg.Transport == TCPPassive {
		if tl, ok := s.ln.(*net.TCPListener); ok {
			tl.SetDeadline(time.Now().Add(s.cfg.Timeout))
		}
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, fmt.Errorf("%w: the device did not connect (%s)", ErrTimeout, s.cfg.Timeout)
			}
			return nil, fmt.Errorf("gbrtp: accept: %w", err)
		}
		s.ln.Close() // one connection per session
		return c, nil
	}
	d := net.Dialer{Timeout: s.cfg.Timeout}
	if s.cfg.Listen != "" {
		a, err := net.ResolveTCPAddr("tcp", s.cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: listen %q: %w", ErrInvalidConfig, s.cfg.Listen, err)
		}
		d.LocalAddr = a
	}
	end := time.Now().Add(s.cfg.Timeout)
	for {
		c, err := d.Dial("tcp", s.cfg.Peer)
		if err == nil {
			s.mu.Lock()
			s.local = c.LocalAddr()
			s.mu.Unlock()
			return c, nil
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("%w: dial %s: %w", ErrTimeout, s.cfg.Peer, err)
		}
		select {
		case <-s.closed:
			return nil, net.ErrClosed
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Session) acceptSSRC(ssrc uint32) bool {
	if !s.haveSSRC {
		s.ssrc, s.haveSSRC = ssrc, true
	}
	if ssrc != s.ssrc {
		s.wrongSSRC.Add(1)
		return false
	}
	return true
}

// packet feeds one in-order RTP packet's payload to the demuxer.
func (s *Session) packet(pkt []byte) {
	h, payload, ok := parseRTP(pkt)
	if !ok {
		s.malformed.Add(1)
		return
	}
	s.packets.Add(1)
	s.bytes.Add(uint64(len(pkt)))
	if s.haveSeq && h.seq != s.nextSeq {
		if gap := h.seq - s.nextSeq; gap < 0x8000 {
			s.lost.Add(uint64(gap))
			s.demux.Reset()
		}
	}
	s.haveSeq, s.nextSeq = true, h.seq+1
	// The marker bit is not used to end a frame early: senders that pack
	// a program stream in fixed sectors (ffmpeg's VOB) set it at sector
	// ends, not frame ends. A frame completes when the next one starts.
	s.demux.Write(payload)
	st := s.demux.Stats()
	s.resyncs.Store(st.Resyncs)
	s.units.Store(st.Units)
	s.droppedUnits.Store(st.Dropped)
	s.unrecognised.Store(s.builder.Unrecognised)
}

// unit takes one access unit from the demuxer.
func (s *Session) unit(u ps.Unit) {
	if s.err != nil {
		return
	}
	s.scratch = s.builder.Add(u, s.arrival, s.scratch[:0])
	for _, f := range s.scratch {
		s.frame(f)
	}
}

func (s *Session) frame(f *media.Frame) {
	if s.out == nil {
		if !s.gate.add(f, s.builder.Tracks(), s.arrival) {
			return
		}
		tracks := s.gate.tracks(s.builder.Tracks())
		s.builder.Fix()
		out, err := s.publish(tracks)
		if err != nil {
			s.err = fmt.Errorf("gbrtp: publish: %w", err)
			return
		}
		s.out, s.published = out, tracks
		held := s.gate.held
		s.gate.held = nil
		for _, h := range held {
			s.write(h)
		}
		return
	}
	s.write(f)
}

func (s *Session) write(f *media.Frame) {
	if s.err != nil {
		return
	}
	for _, t := range s.published {
		if t == f.Track {
			if err := s.out.WriteFrame(f); err != nil {
				s.err = fmt.Errorf("gbrtp: stream: %w", err)
				return
			}
			s.frames.Add(1)
			return
		}
	}
	s.droppedFrames.Add(1)
}
