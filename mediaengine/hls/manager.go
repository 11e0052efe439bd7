package hls

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafov/m3u8"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Config shapes HLS (engineapi hls.*).
type Config struct {
	// Format is "fmp4" or "ts".
	Format          string
	SegmentDuration time.Duration
	// Segments is how many segments the playlist lists.
	Segments       int
	SessionTimeout time.Duration
	// WaitStream is how long a first request waits for the stream.
	WaitStream time.Duration
}

// Protocol is the player protocol of HLS viewers.
const Protocol = "hls"

// segmenterGrace keeps a segmenter without viewers briefly, so a player
// that reopens the stream finds its segments.
const segmenterGrace = 5 * time.Second

// Manager serves the HLS routes of the media HTTP server.
type Manager struct {
	cfg     func() Config
	hub     *hub.Hub
	players *player.Registry
	log     *zap.Logger
	cancel  context.CancelFunc
	done    chan struct{}

	mu         sync.Mutex
	segmenters map[media.Path]*segmenterUse
	sessions   map[string]*session
}

type segmenterUse struct {
	seg      *Segmenter
	sessions int
	lastUse  time.Time
}

// NewManager starts the session janitor; cfg is read for each new
// segmenter and session, so reloaded settings apply to new viewers.
func NewManager(cfg func() Config, h *hub.Hub, players *player.Registry, log *zap.Logger) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, hub: h, players: players, log: log.Named("hls"), cancel: cancel, done: make(chan struct{}),
		segmenters: map[media.Path]*segmenterUse{}, sessions: map[string]*session{}}
	go m.janitor(ctx)
	return m
}

// Close ends every session and segmenter.
func (m *Manager) Close() {
	m.cancel()
	<-m.done
	m.mu.Lock()
	sessions := m.sessions
	segs := m.segmenters
	m.sessions, m.segmenters = map[string]*session{}, map[media.Path]*segmenterUse{}
	m.mu.Unlock()
	for _, s := range sessions {
		m.players.Remove(s.player)
	}
	for _, u := range segs {
		u.seg.Close()
	}
}

func (m *Manager) janitor(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.expire(now)
		}
	}
}

func (m *Manager) expire(now time.Time) {
	timeout := m.cfg().SessionTimeout
	var gone []*session
	var stop []*Segmenter
	m.mu.Lock()
	for id, s := range m.sessions {
		if now.Sub(s.lastSeen) > timeout {
			gone = append(gone, s)
			delete(m.sessions, id)
			m.release(s.path, now)
		}
	}
	for p, u := range m.segmenters {
		if u.sessions == 0 && now.Sub(u.lastUse) > segmenterGrace {
			stop = append(stop, u.seg)
			delete(m.segmenters, p)
		}
	}
	m.mu.Unlock()
	for _, s := range gone {
		m.players.Remove(s.player)
	}
	for _, s := range stop {
		s.Close()
	}
}

// release drops a session's hold on its segmenter; under m.mu.
func (m *Manager) release(p media.Path, now time.Time) {
	if u := m.segmenters[p]; u != nil {
		u.sessions--
		u.lastUse = now
	}
}

// Playlist opens a viewer session and answers the master playlist.
func (m *Manager) Playlist(w http.ResponseWriter, r *http.Request, path media.Path, params map[string]string, ans engineapi.HookAnswer) {
	cfg := m.cfg()
	m.mu.Lock()
	u := m.segmenters[path]
	if u == nil || segmenterEnded(u.seg) {
		u = &segmenterUse{seg: newSegmenter(m.hub, path, cfg, m.log)}
		m.segmenters[path] = u
	}
	u.sessions++
	u.lastUse = time.Now()
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), cfg.WaitStream)
	tracks, err := u.seg.waitTracks(ctx)
	cancel()
	if err != nil {
		m.mu.Lock()
		m.release(path, time.Now())
		m.mu.Unlock()
		if errors.Is(err, ErrNoTSVideo) {
			// The same code as a WHEP offer without a codec of the stream.
			writeError(w, http.StatusNotAcceptable, "no_common_codec", err.Error())
			return
		}
		writeError(w, http.StatusNotFound, "stream_not_found", err.Error())
		return
	}
	s := m.viewerSession(path, u.seg, params)
	if s != nil {
		// The viewer reopened the stream: keep its session (and player).
		m.mu.Lock()
		m.release(path, time.Now())
		m.mu.Unlock()
	} else {
		id := newSessionID()
		s = &session{id: id, path: path, seg: u.seg, lastSeen: time.Now()}
		s.player = &player.Player{Path: path, Protocol: Protocol, RemoteAddr: r.RemoteAddr, Params: params, LeaseID: ans.LeaseID,
			StartedAt: time.Now(), Kick: func() { m.endSession(id) }}
		m.mu.Lock()
		m.sessions[id] = s
		m.mu.Unlock()
		m.players.Add(s.player)
	}
	id := s.id

	mp := m3u8.NewMasterPlaylist()
	vp := m3u8.VariantParams{Codecs: codecs(tracks), Bandwidth: uint32(max(u.seg.bitrateEstimate(), 100_000))}
	for _, t := range tracks {
		if t.Kind() == media.KindVideo && t.Width > 0 {
			vp.Resolution = fmt.Sprintf("%dx%d", t.Width, t.Height)
		}
	}
	mp.Append("hls/"+id+"/index.m3u8"+vhostQuery(path), nil, vp)
	m.serve(w, s, "application/vnd.apple.mpegurl", mp.Encode().Bytes())
}

// viewerSession finds the live session of the same viewer (svc_viewer and
// svc_ticket) on path, so a player that reloads the master playlist keeps
// one session; without svc_viewer every request opens a new one.
func (m *Manager) viewerSession(path media.Path, seg *Segmenter, params map[string]string) *session {
	viewer := params[player.ParamViewer]
	if viewer == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		if s.path == path && s.seg == seg && s.player.Params[player.ParamViewer] == viewer && s.player.Ticket() == params[player.ParamTicket] {
			s.lastSeen = time.Now()
			return s
		}
	}
	return nil
}

// endSession kicks a viewer: its next request gets 404.
func (m *Manager) endSession(id string) {
	m.mu.Lock()
	s := m.sessions[id]
	delete(m.sessions, id)
	if s != nil {
		m.release(s.path, time.Now())
	}
	m.mu.Unlock()
	if s != nil {
		m.players.Remove(s.player)
	}
}

// File answers a session's media playlist, initialisation segment and
// segments.
func (m *Manager) File(w http.ResponseWriter, r *http.Request, path media.Path, id, file string) {
	m.mu.Lock()
	s := m.sessions[id]
	if s != nil && s.path == path {
		s.lastSeen = time.Now()
	}
	m.mu.Unlock()
	if s == nil || s.path != path {
		writeError(w, http.StatusNotFound, "session_not_found", "no such HLS session; open hls.m3u8 again")
		return
	}
	cfg := m.cfg()
	wait := 2*cfg.SegmentDuration + cfg.WaitStream
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	switch {
	case file == "index.m3u8":
		if _, ok := s.seg.waitSegment(ctx, -1); !ok {
			writeError(w, http.StatusNotFound, "stream_not_found", "the stream has no segment yet")
			return
		}
		m.serve(w, s, "application/vnd.apple.mpegurl", s.seg.mediaPlaylist(cfg.Segments, vhostQuery(path)))
	case strings.HasPrefix(file, "init-") && strings.HasSuffix(file, ".mp4"):
		gen, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(file, "init-"), ".mp4"))
		b, ok := s.seg.initSegment(gen)
		if err != nil || !ok {
			writeError(w, http.StatusNotFound, "segment_not_found", "no such initialisation segment")
			return
		}
		m.serve(w, s, "video/mp4", b)
	default:
		name, ext, _ := strings.Cut(file, ".")
		seq, err := strconv.ParseInt(name, 10, 64)
		if err != nil || seq < 0 || (ext != "m4s" && ext != "ts") {
			writeError(w, http.StatusNotFound, "segment_not_found", "no such segment")
			return
		}
		seg, ok := s.seg.waitSegment(ctx, seq)
		if !ok {
			writeError(w, http.StatusNotFound, "segment_not_found", "segment "+name+" is not available")
			return
		}
		ct := "video/mp2t"
		if ext == "m4s" {
			ct = "video/iso.segment"
		}
		m.serve(w, s, ct, seg.data)
	}
}

func (m *Manager) serve(w http.ResponseWriter, s *session, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	n, _ := w.Write(b)
	s.player.AddBytes(n)
}

func segmenterEnded(s *Segmenter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

func (s *Segmenter) bitrateEstimate() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.bitrate)
}

// mediaPlaylist renders the live playlist of the last n segments.
func (s *Segmenter) mediaPlaylist(n int, query string) []byte {
	s.mu.Lock()
	segs := s.segs
	if len(segs) > n {
		segs = segs[len(segs)-n:]
	}
	segs = append([]*segment(nil), segs...)
	s.mu.Unlock()
	p, _ := m3u8.NewMediaPlaylist(uint(len(segs)), uint(len(segs)))
	p.SeqNo = segs[0].seq
	p.DiscontinuitySeq = segs[0].disc
	if s.format == "ts" {
		p.SetVersion(3)
	} else {
		p.SetVersion(7)
	}
	for i, sg := range segs {
		ext := "m4s"
		if s.format == "ts" {
			ext = "ts"
		}
		p.Append(strconv.FormatUint(sg.seq, 10)+"."+ext+query, sg.duration.Seconds(), "")
		if i > 0 && sg.discontinuity {
			p.SetDiscontinuity()
		}
		if s.format != "ts" && (i == 0 || sg.gen != segs[i-1].gen) {
			p.SetMap("init-"+strconv.Itoa(sg.gen)+".mp4"+query, 0, 0)
		}
	}
	p.TargetDuration = math.Ceil(p.TargetDuration)
	return p.Encode().Bytes()
}

func vhostQuery(p media.Path) string {
	if p.Vhost == "" || p.Vhost == media.DefaultVhost {
		return ""
	}
	return "?vhost=" + url.QueryEscape(p.Vhost)
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"code\":%q,\"message\":%q}\n", code, msg)
}
