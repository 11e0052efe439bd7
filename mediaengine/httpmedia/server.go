package httpmedia

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Protocol names as players are listed.
const (
	ProtocolFLV  = "http-flv"
	ProtocolFMP4 = "http-fmp4"
	ProtocolHLS  = "hls"
)

// Config shapes the server.
type Config struct {
	// WaitStream is how long a play request waits for its stream to be
	// published (a camera being pulled on demand) before 404.
	WaitStream time.Duration
	// WriteTimeout drops a player whose socket has taken no data for this
	// long; until then it only loses frames.
	WriteTimeout time.Duration
	// Routes are further GET routes on the media port (pattern to
	// handler), such as recorded playback; they pass the same CORS
	// handling as the live routes.
	Routes map[string]http.Handler
}

// Formats are the hub formats of the long-lived outputs.
type Formats struct {
	FLV, FMP4 hub.Format
}

// HLS serves the HLS routes; the hls package implements it.
type HLS interface {
	// Playlist answers GET /{app}/{stream}/hls.m3u8 for an admitted
	// player.
	Playlist(w http.ResponseWriter, r *http.Request, path media.Path, params map[string]string, ans engineapi.HookAnswer)
	// File answers GET /{app}/{stream}/hls/{session}/{file}.
	File(w http.ResponseWriter, r *http.Request, path media.Path, session, file string)
}

// Server is the media HTTP server.
type Server struct {
	cfg     Config
	hub     *hub.Hub
	players *player.Registry
	gate    Gate
	formats Formats
	hls     HLS
	log     *zap.Logger

	latency  latencyHistogram
	bytesOut atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// liveReaders holds the readers of long-lived responses, closed by
	// Close; shards write them.
	liveMu      sync.Mutex
	liveReaders map[*hub.Reader]struct{}
	shards      []*writeShard
	nextShard   atomic.Uint64
	stopShards  chan struct{}
	shardsDone  sync.WaitGroup
	srv         *http.Server
	mux         *http.ServeMux
	done        chan struct{}
}

// New makes a server; Serve starts it.
func New(cfg Config, h *hub.Hub, players *player.Registry, gate Gate, formats Formats, hls HLS, log *zap.Logger) *Server {
	if cfg.WaitStream <= 0 {
		cfg.WaitStream = 5 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 15 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, hub: h, players: players, gate: gate, formats: formats, hls: hls, log: log, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), liveReaders: map[*hub.Reader]struct{}{}, stopShards: make(chan struct{})}
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		sh := newWriteShard(s)
		s.shards = append(s.shards, sh)
		s.shardsDone.Add(1)
		go func() {
			defer s.shardsDone.Done()
			sh.run(s.stopShards)
		}()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{app}/{file}", s.live)
	mux.HandleFunc("GET /{app}/{stream}/hls.m3u8", s.hlsPlaylist)
	mux.HandleFunc("GET /{app}/{stream}/hls/{session}/{file}", s.hlsFile)
	for pattern, h := range cfg.Routes {
		mux.Handle("GET "+pattern, h)
	}
	mux.HandleFunc("OPTIONS /", preflight)
	s.mux = mux
	s.srv = &http.Server{Handler: cors(mux), ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(log.Named("http"))}
	return s
}

// HandleFunc adds a route of another output that shares the media port
// (WHEP and WHIP signalling); call it before Serve.
func (s *Server) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	s.mux.HandleFunc(pattern, handler)
}

// Serve serves on ln until Close.
func (s *Server) Serve(ln net.Listener) {
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("media HTTP server stopped", zap.Error(err))
		}
	}()
}

// Close stops accepting, ends every long-lived response and waits for
// them.
func (s *Server) Close() error {
	s.cancel()
	s.liveMu.Lock()
	for rd := range s.liveReaders {
		rd.Close()
	}
	s.liveMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	s.wg.Wait()
	close(s.stopShards)
	s.shardsDone.Wait()
	return err
}

// FrameToWire summarises the time from a frame entering the hub to its FLV
// tag being written to a player's socket.
func (s *Server) FrameToWire() engineapi.Latency { return s.latency.summary() }

// BytesOut is the number of media bytes written to players.
func (s *Server) BytesOut() uint64 { return s.bytesOut.Load() }

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	switch {
	case strings.HasSuffix(file, ".live.flv") && s.formats.FLV != nil:
		s.serveLive(w, r, strings.TrimSuffix(file, ".live.flv"), s.formats.FLV, ProtocolFLV, "video/x-flv")
	case strings.HasSuffix(file, ".live.mp4") && s.formats.FMP4 != nil:
		s.serveLive(w, r, strings.TrimSuffix(file, ".live.mp4"), s.formats.FMP4, ProtocolFMP4, "video/mp4")
	default:
		writeError(w, http.StatusNotFound, "not_found", "no such media URL: use /{app}/{stream}.live.flv, .live.mp4 or /{app}/{stream}/hls.m3u8")
	}
}

// admit validates the path and asks the gate; it answers the player itself
// when it refuses.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, stream, protocol string) (media.Path, map[string]string, engineapi.HookAnswer, bool) {
	q := r.URL.Query()
	path := hub.Key(media.Path{Vhost: q.Get("vhost"), App: r.PathValue("app"), Stream: stream})
	if !validName(path.App) || !validName(path.Stream) || !validName(path.Vhost) {
		writeError(w, http.StatusBadRequest, "invalid_path", "app and stream are 1-128 letters, digits, '-', '_' or '.'")
		return path, nil, engineapi.HookAnswer{}, false
	}
	params := flatten(q)
	ans, err := s.gate.AllowPlay(r.Context(), engineapi.PlayHook{StreamRef: engineapi.StreamRef{Vhost: path.Vhost, App: path.App, Stream: path.Stream},
		Protocol: protocol, RemoteAddr: r.RemoteAddr, Params: params})
	if err != nil {
		s.log.Warn("on_play failed; refusing the player", zap.String("stream", path.String()), zap.String("remote", r.RemoteAddr), zap.Error(err))
		writeError(w, http.StatusForbidden, "play_denied", "playback could not be authorised")
		return path, nil, ans, false
	}
	if !ans.Allow {
		s.log.Info("on_play denied", zap.String("stream", path.String()), zap.String("remote", r.RemoteAddr), zap.String("reason", ans.Reason))
		writeError(w, http.StatusForbidden, "play_denied", "playback denied: "+ans.Reason)
		return path, nil, ans, false
	}
	return path, params, ans, true
}

func (s *Server) serveLive(w http.ResponseWriter, r *http.Request, stream string, format hub.Format, protocol, contentType string) {
	path, params, ans, ok := s.admit(w, r, stream, protocol)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WaitStream)
	rd, err := s.hub.Subscribe(ctx, path, format, protocol+" "+r.RemoteAddr)
	cancel()
	if err != nil {
		status, code := http.StatusNotFound, "stream_not_found"
		switch {
		case errors.Is(err, hub.ErrNoCarriedTrack):
			// The same code as a WHEP offer without a codec of the stream.
			status, code = http.StatusNotAcceptable, "no_common_codec"
		case !errors.Is(err, hub.ErrStreamNotFound):
			status, code = http.StatusServiceUnavailable, "stream_unavailable"
		}
		writeError(w, status, code, err.Error())
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		rd.Close()
		writeError(w, http.StatusInternalServerError, "internal", "cannot take over the connection")
		return
	}
	p := &player.Player{Path: path, Protocol: protocol, RemoteAddr: r.RemoteAddr, Params: params, LeaseID: ans.LeaseID,
		StartedAt: time.Now(), Counters: func() (uint64, uint64) { return rd.Frames(), rd.Dropped() }, Kick: rd.Close}
	c := &liveConn{srv: s, shard: s.shards[s.nextShard.Add(1)%uint64(len(s.shards))], conn: conn, rd: rd, p: p,
		chunked: r.ProtoAtLeast(1, 1), measure: protocol == ProtocolFLV}
	s.liveMu.Lock()
	if s.ctx.Err() != nil {
		s.liveMu.Unlock()
		rd.Close()
		conn.Close()
		return
	}
	s.liveReaders[rd] = struct{}{}
	s.wg.Add(1)
	s.liveMu.Unlock()
	s.players.Add(p)
	if err := c.start(contentType); err != nil {
		c.close(err)
	}
	// The shard writes from here; this goroutine (net/http's) ends.
}

// endLive forgets a finished long-lived response.
func (s *Server) endLive(c *liveConn, err error) {
	s.liveMu.Lock()
	delete(s.liveReaders, c.rd)
	s.liveMu.Unlock()
	s.players.Remove(c.p)
	s.log.Debug("player left", zap.String("stream", c.p.Path.String()), zap.String("protocol", c.p.Protocol), zap.String("remote", c.p.RemoteAddr),
		zap.Uint64("bytes", c.p.Bytes()), zap.Uint64("dropped", c.rd.Dropped()), zap.Error(err))
	s.wg.Done()
}

// errNotSocket is returned for a hijacked connection that is not an OS
// socket.
var errNotSocket = errors.New("httpmedia: the connection is not a socket")

func strconvHex(n int) string { return strconv.FormatInt(int64(n), 16) }

func (s *Server) hlsPlaylist(w http.ResponseWriter, r *http.Request) {
	if s.hls == nil {
		writeError(w, http.StatusNotFound, "not_found", "HLS is not enabled")
		return
	}
	path, params, ans, ok := s.admit(w, r, r.PathValue("stream"), ProtocolHLS)
	if !ok {
		return
	}
	s.hls.Playlist(w, r, path, params, ans)
}

func (s *Server) hlsFile(w http.ResponseWriter, r *http.Request) {
	if s.hls == nil {
		writeError(w, http.StatusNotFound, "not_found", "HLS is not enabled")
		return
	}
	path := hub.Key(media.Path{Vhost: r.URL.Query().Get("vhost"), App: r.PathValue("app"), Stream: r.PathValue("stream")})
	s.hls.File(w, r, path, r.PathValue("session"), r.PathValue("file"))
}

// validName keeps app and stream names to what URLs, logs and file names
// carry safely.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return s != "." && s != ".."
}

// flatten keeps the first value of each query parameter, as hooks carry
// them.
func flatten(q url.Values) map[string]string {
	out := make(map[string]string, len(q))
	for k, v := range q {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	return out
}

func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		// Location, ETag and Link are the WHEP/WHIP session's resource URL,
		// ICE session tag and ICE servers; X-Svc-Note says what a WHEP
		// session left out.
		h.Set("Access-Control-Expose-Headers", "Content-Type, Content-Length, Location, ETag, Link, X-Svc-Note")
		next.ServeHTTP(w, r)
	})
}

func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", r.Header.Get("Access-Control-Request-Headers"))
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// WriteError answers a player with the engine's error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(engineapi.Error{Code: code, Message: msg})
}
