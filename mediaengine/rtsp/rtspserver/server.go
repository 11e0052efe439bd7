package rtspserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Server is the engine's RTSP server: clients publish into it with
// ANNOUNCE/RECORD and play from it with DESCRIBE/SETUP/PLAY, over TCP
// interleaved or UDP. Each connection is served by one goroutine that owns
// its state; a playing session adds one goroutine that writes its frames.
type Server struct {
	cfg     Config
	handler Handler
	log     *zap.Logger

	ln  net.Listener
	udp *serverUDP

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[SessionID]*serverSession
	conns    map[*serverConn]struct{}
}

// New returns a server for handler; Start makes it listen.
func New(cfg Config, handler Handler) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, handler: handler, log: cfg.Log,
		sessions: map[SessionID]*serverSession{}, conns: map[*serverConn]struct{}{}}, nil
}

// Start listens and serves until ctx ends or Close is called.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("rtsp: listen %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.ctx, s.cancel = context.WithCancel(ctx)
	if s.cfg.UDPRTPAddr != "" {
		if s.udp, err = listenServerUDP(s.cfg.UDPRTPAddr, s.log); err != nil {
			ln.Close()
			return err
		}
		s.wg.Add(2)
		go func() { defer s.wg.Done(); s.udp.serve(s.udp.rtp, false) }()
		go func() { defer s.wg.Done(); s.udp.serve(s.udp.rtcp, true) }()
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		<-s.ctx.Done()
		ln.Close()
		if s.udp != nil {
			s.udp.close()
		}
		s.mu.Lock()
		for c := range s.conns {
			c.conn.Close()
		}
		s.mu.Unlock()
	}()
	go func() { defer s.wg.Done(); s.accept() }()
	return nil
}

// Addr is the TCP address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// UDPAddr is the RTP UDP address, nil when UDP is off.
func (s *Server) UDPAddr() net.Addr {
	if s.udp == nil {
		return nil
	}
	return s.udp.rtp.LocalAddr()
}

// Close stops the server, ends every session and waits for all goroutines.
func (s *Server) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

func (s *Server) accept() {
	var delay time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			s.log.Warn("rtsp accept", zap.Error(err))
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := newServerConn(s, conn)
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return
		}
		if len(s.conns) >= s.cfg.MaxConnections {
			s.mu.Unlock()
			s.log.Warn("rtsp connection refused: MaxConnections reached", zap.Int("max", s.cfg.MaxConnections), zap.Stringer("client", conn.RemoteAddr()))
			conn.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Sessions lists the current sessions, oldest first.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Kick ends a session (its connection is closed); it reports whether the
// session existed.
func (s *Server) Kick(id SessionID) bool {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return false
	}
	ss.conn.conn.Close()
	return true
}

func (s *Server) register(ss *serverSession) {
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
}

func (s *Server) unregister(ss *serverSession) {
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	if s.udp != nil {
		s.udp.removeSession(ss)
	}
}

func newID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randUint32() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
