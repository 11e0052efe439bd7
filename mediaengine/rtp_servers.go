package mediaengine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/controlapi"
	"github.com/svcplatform/svc/mediaengine/gbrtp"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Errors of the RTP server registry; the control API maps them.
var (
	errRTPServerInvalid  = controlapi.ErrRTPServerInvalid
	errRTPServerExists   = controlapi.ErrRTPServerExists
	errRTPServerNotFound = errors.New("no such RTP server")
)

// rtpServers are the open GB28181 RTP servers, one per stream.
type rtpServers struct {
	e  *Engine
	mu sync.Mutex
	m  map[string]*rtpServer
	wg sync.WaitGroup
}

type rtpServer struct {
	info      engineapi.RTPServerInfo
	session   *gbrtp.Session
	published chan struct{}
	once      sync.Once
}

func newRTPServers(e *Engine) *rtpServers { return &rtpServers{e: e, m: map[string]*rtpServer{}} }

// open binds the server's port and starts receiving.
func (r *rtpServers) open(req engineapi.OpenRTPServerRequest) (engineapi.RTPServerInfo, error) {
	path, err := r.validate(req)
	if err != nil {
		return engineapi.RTPServerInfo{}, err
	}
	host, _, _ := net.SplitHostPort(r.e.cfg.Load().RTSPAddr)
	cfg := gbrtp.Config{Transport: gbrtp.Transport(req.Transport), Peer: req.Peer, SSRC: req.SSRC,
		Timeout: time.Duration(req.TimeoutSeconds) * time.Second}
	if req.Port != 0 {
		cfg.Listen = net.JoinHostPort(host, strconv.Itoa(req.Port))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.m {
		if hub.Key(media.Path{Vhost: s.info.Vhost, App: s.info.App, Stream: s.info.Stream}) == path {
			return engineapi.RTPServerInfo{}, fmt.Errorf("%w: %s", errRTPServerExists, path)
		}
	}
	sess, err := gbrtp.Listen(cfg)
	if err != nil {
		return engineapi.RTPServerInfo{}, err
	}
	s := &rtpServer{session: sess, published: make(chan struct{}), info: engineapi.RTPServerInfo{ID: uuid.NewString(),
		Vhost: path.Vhost, App: path.App, Stream: path.Stream, Port: req.Port, Transport: req.Transport, SSRC: req.SSRC,
		StartedAt: time.Now().UTC()}}
	if a, ok := sess.LocalAddr().(*net.UDPAddr); ok {
		s.info.Port = a.Port
	} else if a, ok := sess.LocalAddr().(*net.TCPAddr); ok {
		s.info.Port = a.Port
	}
	r.m[s.info.ID] = s
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.run(s, path, req)
	}()
	return s.info, nil
}

func (r *rtpServers) validate(req engineapi.OpenRTPServerRequest) (media.Path, error) {
	if req.App == "" || req.Stream == "" {
		return media.Path{}, fmt.Errorf("%w: app and stream are required", errRTPServerInvalid)
	}
	switch req.Transport {
	case engineapi.RTPTransportUDP, engineapi.RTPTransportTCPPassive:
		if req.Port < 1024 || req.Port > 65535 {
			return media.Path{}, fmt.Errorf("%w: port %d is not within 1024-65535", errRTPServerInvalid, req.Port)
		}
	case engineapi.RTPTransportTCPActive:
		if _, _, err := net.SplitHostPort(req.Peer); err != nil {
			return media.Path{}, fmt.Errorf("%w: peer %q is not host:port", errRTPServerInvalid, req.Peer)
		}
		if req.Port != 0 && (req.Port < 1024 || req.Port > 65535) {
			return media.Path{}, fmt.Errorf("%w: port %d is not within 1024-65535", errRTPServerInvalid, req.Port)
		}
	default:
		return media.Path{}, fmt.Errorf("%w: transport %q is not udp, tcp-passive or tcp-active", errRTPServerInvalid, req.Transport)
	}
	if req.TimeoutSeconds < 0 || req.TimeoutSeconds > 3600 {
		return media.Path{}, fmt.Errorf("%w: timeoutSeconds %d is not within 0-3600", errRTPServerInvalid, req.TimeoutSeconds)
	}
	return hub.Key(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream}), nil
}

// run receives until the session ends, then unpublishes and forgets it.
func (r *rtpServers) run(s *rtpServer, path media.Path, req engineapi.OpenRTPServerRequest) {
	log := r.e.log.With(zap.String("stream", path.String()), zap.String("rtpServer", s.info.ID), zap.Int("port", s.info.Port))
	var pub *hub.Publisher
	err := s.session.Run(r.e.ctx, func(tracks []*media.Track) (gbrtp.FrameWriter, error) {
		ctx, cancel := context.WithTimeout(r.e.ctx, r.e.cfg.Load().Hooks.Timeout.D()+time.Second)
		defer cancel()
		p, err := r.e.Publish(ctx, path, hub.Origin{Kind: "gb28181", URL: "rtp://" + req.Transport + "/" + strconv.Itoa(s.info.Port)}, nil, tracks)
		if err != nil {
			return nil, err
		}
		pub = p
		s.once.Do(func() { close(s.published) })
		log.Info("GB28181 stream published", zap.Stringers("tracks", tracksOf(tracks)))
		return p, nil
	})
	if pub != nil {
		pub.Close()
	}
	r.mu.Lock()
	delete(r.m, s.info.ID)
	r.mu.Unlock()
	st := s.session.Stats()
	log.Info("RTP server closed", zap.Error(err), zap.Uint64("packets", st.Packets), zap.Uint64("frames", st.Frames),
		zap.Uint64("wrongSsrc", st.WrongSSRC), zap.Uint64("wrongSource", st.WrongSource), zap.Uint64("lost", st.Lost))
	if errors.Is(err, gbrtp.ErrTimeout) {
		r.e.hooks.Load().RTPServerTimeout(engineapi.RTPServerTimeoutHook{StreamRef: streamRef(path), ID: s.info.ID, Port: s.info.Port,
			SSRC: req.SSRC, TimeoutSeconds: int(s.sessionTimeout(req) / time.Second), Published: pub != nil})
	}
}

func (s *rtpServer) sessionTimeout(req engineapi.OpenRTPServerRequest) time.Duration {
	if req.TimeoutSeconds > 0 {
		return time.Duration(req.TimeoutSeconds) * time.Second
	}
	return gbrtp.DefaultTimeout
}

func tracksOf(tracks []*media.Track) []fmt.Stringer {
	out := make([]fmt.Stringer, len(tracks))
	for i, t := range tracks {
		out[i] = t
	}
	return out
}

// close ends one server.
func (r *rtpServers) close(id string) error {
	r.mu.Lock()
	s := r.m[id]
	r.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %s", errRTPServerNotFound, id)
	}
	s.session.Close()
	return nil
}

// list describes the open servers.
func (r *rtpServers) list() []engineapi.RTPServerInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]engineapi.RTPServerInfo, 0, len(r.m))
	for _, s := range r.m {
		info := s.info
		st := s.session.Stats()
		info.Packets, info.Bytes, info.Frames, info.WrongSSRC, info.WrongSource, info.Lost =
			st.Packets, st.Bytes, st.Frames, st.WrongSSRC, st.WrongSource, st.Lost
		select {
		case <-s.published:
			info.Published = true
		default:
		}
		out = append(out, info)
	}
	return out
}

// closeAll ends every server and waits for them.
func (r *rtpServers) closeAll() {
	r.mu.Lock()
	for _, s := range r.m {
		s.session.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
