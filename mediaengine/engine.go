package mediaengine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/composite"
	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/flv"
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/hls"
	"github.com/svcplatform/svc/mediaengine/hooks"
	"github.com/svcplatform/svc/mediaengine/httpmedia"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/mediaengine/rtc"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Engine is a running media engine: the hub, the media HTTP server, the
// pull proxies, the hooks and the loopback control API.
type Engine struct {
	path      string
	cfg       atomic.Pointer[engineapi.Config]
	log       *zap.Logger
	secret    string
	startedAt time.Time

	hooks   atomic.Pointer[hooks.Client]
	hub     *hub.Hub
	players *player.Registry
	media   *httpmedia.Server
	hls     *hls.Manager
	proxies *proxy.Registry
	flows   *flowReporter
	rtsp    *rtspserver.Server
	// rtpServers receive GB28181 program streams over RTP.
	rtpServers *rtpServers
	rtc        *rtc.Server // nil when WebRTC is off
	records    *recorder.Recorder
	// composites renders meeting composites from records' files.
	composites *composite.Pool

	mediaAddr   net.Addr
	controlAddr net.Addr
	control     *http.Server
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	done        chan struct{}
}

// Start opens the engine's listeners and returns once it serves.
func Start(ctx context.Context, path string, cfg engineapi.Config, log *zap.Logger) (*Engine, error) {
	if cfg.ControlSecretFile == "" {
		return nil, errors.New("engine: controlSecretFile is required: the control API is never open")
	}
	secret, err := engineapi.ReadSecret(cfg.ControlSecretFile)
	if err != nil {
		return nil, fmt.Errorf("engine: control secret: %w", err)
	}
	var demo *filesource.Clip
	var demoPath media.Path
	if cfg.DemoFile != "" {
		if demoPath, err = parsePath(cfg.DemoPath); err != nil {
			return nil, fmt.Errorf("engine: demoPath: %w", err)
		}
		if demo, err = filesource.LoadFile(cfg.DemoFile); err != nil {
			return nil, fmt.Errorf("engine: demoFile: %w", err)
		}
	}
	hc, err := hooks.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	ctrlLn, err := net.Listen("tcp", cfg.ControlAddr)
	if err != nil {
		hc.Close()
		return nil, fmt.Errorf("engine: control API: %w", err)
	}
	mediaLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		hc.Close()
		ctrlLn.Close()
		return nil, fmt.Errorf("engine: media HTTP: %w", err)
	}
	e := &Engine{path: path, log: log, secret: secret, startedAt: time.Now().UTC(), done: make(chan struct{}), mediaAddr: mediaLn.Addr(),
		controlAddr: ctrlLn.Addr()}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.cfg.Store(&cfg)
	e.hooks.Store(hc)
	e.players = player.NewRegistry()
	e.flows = newFlowReporter(e)
	e.players.OnLeave = e.flows.left
	e.hub = hub.New(hub.Config{ReaderQueueFrames: cfg.ReaderQueueFrames, GOPCacheMaxFrames: cfg.GOPCacheMaxFrames,
		NoReaderTimeout: cfg.NoReaderTimeout.D(), ContinueGrace: cfg.ContinueGrace.D(), MergeWindow: cfg.MergeWrite.D(),
		OnStreamChanged: e.streamChanged, OnNoneReader: e.noneReader}, log.Named("hub"))
	// The first even pair of the RTP range serves RTSP over UDP; pulls
	// take their pairs from the rest.
	pulls := rtspPuller{udpPorts: [2]int{cfg.RTPPortMin + 2, cfg.RTPPortMax}, log: log.Named("rtsp-pull")}
	e.proxies = proxy.NewRegistry(e.hub, map[string]proxy.Puller{"file": filePuller{}, "rtsp": pulls, "rtsps": pulls}, log)
	e.rtpServers = newRTPServers(e)
	e.hls = hls.NewManager(e.hlsConfig, e.hub, e.players, log)
	if e.records, err = e.startRecorder(cfg); err != nil {
		hc.Close()
		ctrlLn.Close()
		mediaLn.Close()
		e.hub.Close()
		return nil, err
	}
	// Two renders at once: ffmpeg encodes on every core it gets, and
	// the engine's live media must keep some.
	e.composites = composite.New(e.records, 2)
	e.media = httpmedia.New(httpmedia.Config{WaitStream: waitStream, Routes: e.recordRoutes()}, e.hub, e.players, e,
		httpmedia.Formats{FLV: flv.Format{}, FMP4: fmp4.LiveFormat{}}, e.hls, log.Named("media"))
	e.startWebRTC(cfg.WebRTC)
	e.media.Serve(mediaLn)
	if err := e.startRTSP(cfg); err != nil {
		if e.rtc != nil {
			e.rtc.Close()
		}
		e.records.Close()
		e.media.Close()
		hc.Close()
		ctrlLn.Close()
		e.hub.Close()
		return nil, err
	}
	e.control = &http.Server{Handler: e.controlRoutes(), ReadHeaderTimeout: 5 * time.Second}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(e.done)
		if err := e.control.Serve(ctrlLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", zap.Error(err))
		}
	}()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.flows.run(e.ctx)
	}()
	if demo != nil {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.runDemo(e.ctx, demo, demoPath, cfg.DemoFile)
		}()
	}
	log.Info("engine started", zap.String("control", ctrlLn.Addr().String()), zap.String("media", mediaLn.Addr().String()),
		zap.String("mediaServerId", cfg.MediaServerID), zap.Int("pid", os.Getpid()))
	return e, nil
}

// rtspRealm is the realm of the RTSP server's Digest challenge.
const rtspRealm = "svc"

// startRTSP serves RTSP publishers and players on rtspAddr. With hooks
// configured every client authenticates with Digest against the RTSP
// credentials the control plane keeps for this media server (asked with
// on_rtsp_auth), or plays with a playback ticket checked by on_play; a
// stand-alone engine is open.
func (e *Engine) startRTSP(cfg engineapi.Config) error {
	host, _, err := net.SplitHostPort(cfg.RTSPAddr)
	if err != nil {
		return fmt.Errorf("engine: rtspAddr: %w", err)
	}
	sc := rtspserver.Config{Addr: cfg.RTSPAddr, UDPRTPAddr: net.JoinHostPort(host, strconv.Itoa(cfg.RTPPortMin+cfg.RTPPortMin%2)),
		Realm: rtspRealm, Log: e.log.Named("rtsp")}
	if e.hooks.Load().Enabled() {
		// A player with a playback URL's ticket needs no credentials:
		// on_play checks the ticket as it does for HTTP players.
		sc.TicketParam = player.ParamTicket
		sc.Credentials = func(user string) (string, bool) {
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Load().Hooks.Timeout.D())
			defer cancel()
			pw, ok, err := e.hooks.Load().RTSPPassword(ctx, user, rtspRealm, "")
			return pw, ok && err == nil
		}
	}
	srv, err := rtspserver.New(sc, rtspHandler{e: e})
	if err != nil {
		return fmt.Errorf("engine: rtsp: %w", err)
	}
	if err := srv.Start(e.ctx); err != nil {
		return fmt.Errorf("engine: rtsp: %w", err)
	}
	e.rtsp = srv
	return nil
}

// ControlAddr is the address the loopback control API listens on: the
// configured one, with the port the system chose when it was 0.
func (e *Engine) ControlAddr() net.Addr { return e.controlAddr }

// RTSPAddr is the address the RTSP server listens on.
func (e *Engine) RTSPAddr() net.Addr { return e.rtsp.Addr() }

// waitStream is how long a play request waits for its stream to appear.
const waitStream = 5 * time.Second

func (e *Engine) hlsConfig() hls.Config {
	c := e.cfg.Load().HLS
	return hls.Config{Format: c.Format, SegmentDuration: c.SegmentDuration.D(), Segments: c.Segments,
		SessionTimeout: c.SessionTimeout.D(), WaitStream: waitStream}
}

// MediaAddr is the address the media HTTP server listens on.
func (e *Engine) MediaAddr() net.Addr { return e.mediaAddr }

// Hub is the engine's stream hub, for inputs plugged in by the assembly
// (the RTSP server and puller).
func (e *Engine) Hub() *hub.Hub { return e.hub }

// Close stops the engine: inputs first, then players, then the APIs.
func (e *Engine) Close() error {
	e.cancel()
	e.rtsp.Close()
	e.rtpServers.closeAll()
	if e.rtc != nil {
		e.rtc.Close()
	}
	e.proxies.Close()
	e.hls.Close()
	errMedia := e.media.Close()
	e.records.Close()
	e.hub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errCtl := e.control.Shutdown(ctx)
	e.wg.Wait()
	e.hooks.Load().Close()
	e.log.Info("engine stopped")
	return errors.Join(errMedia, errCtl)
}

// AllowPlay is the media server's gate: the current hooks client's
// on_play.
func (e *Engine) AllowPlay(ctx context.Context, req engineapi.PlayHook) (engineapi.HookAnswer, error) {
	return e.hooks.Load().AllowPlay(ctx, req)
}

// Publish admits a publisher through on_publish and opens its stream; the
// RTSP server's ANNOUNCE/RECORD calls it.
func (e *Engine) Publish(ctx context.Context, path media.Path, origin hub.Origin, params map[string]string, tracks []*media.Track) (*hub.Publisher, error) {
	path = hub.Key(path)
	ans, err := e.hooks.Load().AllowPublish(ctx, engineapi.PublishHook{StreamRef: streamRef(path), Protocol: origin.Kind,
		RemoteAddr: origin.RemoteAddr, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errOnPublish, err)
	}
	if !ans.Allow {
		return nil, fmt.Errorf("%w: %s", ErrPublishDenied, ans.Reason)
	}
	return e.hub.Publish(path, origin, tracks)
}

// Play admits a player through on_play and subscribes it to the stream's
// raw frames, listing it as a player of protocol; the RTSP server's PLAY
// calls it. The player ends when the reader is closed (by the caller, a
// kick or the stream's end); the caller must call leave when it stops.
func (e *Engine) Play(ctx context.Context, path media.Path, protocol, remoteAddr string, params map[string]string) (rd *hub.Reader, leave func(), err error) {
	rd, _, leave, err = e.play(ctx, path, nil, protocol, remoteAddr, params)
	return rd, leave, err
}

// play is Play in format (nil for raw frames) that also answers the
// registered player, for outputs that count the bytes they send to it
// themselves.
func (e *Engine) play(ctx context.Context, path media.Path, format hub.Format, protocol, remoteAddr string, params map[string]string) (*hub.Reader, *player.Player, func(),
	error) {
	path = hub.Key(path)
	ans, err := e.hooks.Load().AllowPlay(ctx, engineapi.PlayHook{StreamRef: streamRef(path), Protocol: protocol, RemoteAddr: remoteAddr, Params: params})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errOnPlay, err)
	}
	if !ans.Allow {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrPlayDenied, ans.Reason)
	}
	wctx, cancel := context.WithTimeout(ctx, waitStream)
	defer cancel()
	rd, err := e.hub.Subscribe(wctx, path, format, protocol+" "+remoteAddr)
	if err != nil {
		return nil, nil, nil, err
	}
	p := &player.Player{Path: path, Protocol: protocol, RemoteAddr: remoteAddr, Params: params, LeaseID: ans.LeaseID,
		StartedAt: time.Now(), Counters: func() (uint64, uint64) { return rd.Frames(), rd.Dropped() }, Kick: rd.Close}
	e.players.Add(p)
	return rd, p, func() { rd.Close(); e.players.Remove(p) }, nil
}

// errOnPlay and errOnPublish mark a hook that gave no answer (a timeout,
// the control plane unreachable): the player or publisher is refused.
var (
	errOnPlay    = errors.New("engine: on_play")
	errOnPublish = errors.New("engine: on_publish")
)

// ErrPlayDenied is returned when on_play refuses a player.
var ErrPlayDenied = errors.New("engine: on_play denied the player")

// ErrPublishDenied is returned when on_publish refuses a publisher.
var ErrPublishDenied = errors.New("engine: on_publish denied the publisher")

func streamRef(p media.Path) engineapi.StreamRef {
	return engineapi.StreamRef{Vhost: p.Vhost, App: p.App, Stream: p.Stream}
}

// parsePath reads "app/stream" or "vhost/app/stream".
func parsePath(s string) (media.Path, error) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		return hub.Key(media.Path{App: parts[0], Stream: parts[1]}), nil
	case 3:
		return hub.Key(media.Path{Vhost: parts[0], App: parts[1], Stream: parts[2]}), nil
	}
	return media.Path{}, fmt.Errorf("%q is not app/stream or vhost/app/stream", s)
}

// runDemo publishes the demo clip at path until the engine stops; if the
// path is taken (or closed from the control API) it tries again.
func (e *Engine) runDemo(ctx context.Context, clip *filesource.Clip, path media.Path, file string) {
	for ctx.Err() == nil {
		pub, err := e.hub.Publish(path, hub.Origin{Kind: "file", URL: file}, clip.Tracks)
		if err == nil {
			err = filesource.Play(ctx, clip, pub, 0)
			pub.Close()
		}
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("demo source stopped; restarting", zap.String("stream", path.String()), zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
