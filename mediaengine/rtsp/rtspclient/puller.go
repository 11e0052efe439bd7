package rtspclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// Puller pulls one RTSP stream and keeps pulling it: it reconnects with
// capped exponential backoff, switches to TCP when UDP does not work, and
// reports its state.
type Puller struct {
	cfg PullerConfig

	mu     sync.Mutex
	status PullerStatus
	tcp    bool // UDP failed once: TCP from now on
}

// NewPuller checks the configuration and returns a Puller; Run starts it.
func NewPuller(cfg PullerConfig) (*Puller, error) {
	if err := cfg.Client.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.MinBackoff)
	}
	if cfg.OnFrame == nil {
		return nil, errors.New("rtsp: PullerConfig.OnFrame is required")
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	p := &Puller{cfg: cfg, tcp: cfg.Client.Transport == TransportTCP}
	p.status.State, p.status.Since = PullerWaiting, time.Now()
	return p, nil
}

// Status returns the current status.
func (p *Puller) Status() PullerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func (p *Puller) setState(s PullerState, err error) {
	p.mu.Lock()
	p.status.State, p.status.Since = s, time.Now()
	if err != nil {
		p.status.LastError = err.Error()
	}
	p.mu.Unlock()
	if p.cfg.OnState != nil {
		p.cfg.OnState(s, err)
	}
}

// Run pulls until ctx ends; it always returns ctx's error.
func (p *Puller) Run(ctx context.Context) error {
	defer p.setState(PullerStopped, nil)
	failures := 0
	for {
		delivered, err := p.session(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if delivered {
			failures = 0
		}
		if p.switchToTCP(err) {
			p.cfg.Log.Info("rtsp pull: UDP does not work, using TCP", zap.String("url", redact(p.cfg.URL)), zap.Error(err))
			continue // at once: the source is fine
		}
		failures++
		wait := p.backoff(failures)
		p.cfg.Log.Info("rtsp pull failed", zap.String("url", redact(p.cfg.URL)), zap.Error(err), zap.Duration("retryIn", wait))
		p.setState(PullerWaiting, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Once runs one pull session for a caller with its own retry policy (the
// engine's proxy registry); in automatic mode a session that finds UDP
// unusable is retried over TCP at once, within the same call. It reports
// whether frames were delivered.
func (p *Puller) Once(ctx context.Context) (delivered bool, err error) {
	delivered, err = p.session(ctx)
	if ctx.Err() == nil && !delivered && p.switchToTCP(err) {
		p.cfg.Log.Info("rtsp pull: UDP does not work, using TCP", zap.String("url", redact(p.cfg.URL)), zap.Error(err))
		return p.session(ctx)
	}
	return delivered, err
}

// switchToTCP decides whether err means UDP cannot work here.
func (p *Puller) switchToTCP(err error) bool {
	if p.tcp || p.cfg.Client.Transport != TransportAuto {
		return false
	}
	var se *rtsp.StatusError
	if errors.Is(err, rtsp.ErrUDPTimeout) || errors.Is(err, errTransportRefused) || (errors.As(err, &se) && se.Code == rtsp.StatusUnsupportedTransport) {
		p.mu.Lock()
		p.tcp = true
		p.mu.Unlock()
		return true
	}
	return false
}

func (p *Puller) backoff(failures int) time.Duration {
	d := p.cfg.MinBackoff
	for i := 1; i < failures && d < p.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.cfg.MaxBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// maxRedirects bounds how many 3xx answers one attempt follows.
const maxRedirects = 3

// connect dials, asks OPTIONS and DESCRIBE, and follows redirects (a
// server handing the stream to another path, port or host). The
// credentials of the configured URL go along only to the same host: a
// redirect elsewhere must not collect the camera's password.
func (p *Puller) connect(ctx context.Context) (*Client, error) {
	target := p.cfg.URL
	for hops := 0; ; hops++ {
		c, err := Dial(ctx, target, p.cfg.Client)
		if err != nil {
			return nil, err
		}
		err = c.Options(ctx)
		if err == nil {
			_, err = c.Describe(ctx)
		}
		if err == nil {
			return c, nil
		}
		c.Close()
		var se *rtsp.StatusError
		if !errors.As(err, &se) || se.Code < 300 || se.Code > 399 || se.Location == "" || hops == maxRedirects {
			return nil, err
		}
		next, perr := url.Parse(se.Location)
		if perr != nil || next.Scheme != "rtsp" {
			return nil, err
		}
		if orig, _ := url.Parse(p.cfg.URL); next.User == nil && orig != nil && strings.EqualFold(orig.Hostname(), next.Hostname()) {
			next.User = orig.User
		}
		p.cfg.Log.Info("rtsp pull redirected", zap.String("from", redact(target)), zap.String("to", redact(next.String())))
		target = next.String()
	}
}

// session runs one connection from dial to failure; it reports whether
// frames were delivered.
func (p *Puller) session(ctx context.Context) (delivered bool, err error) {
	p.setState(PullerConnecting, nil)
	p.mu.Lock()
	p.status.Attempts++
	useUDP := !p.tcp
	p.status.Transport = TransportTCP
	if useUDP {
		p.status.Transport = TransportUDP
	}
	p.mu.Unlock()

	c, err := p.connect(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := c.Setup(ctx, useUDP); err != nil {
		return false, err
	}
	if p.cfg.OnTracks != nil {
		p.cfg.OnTracks(c.Tracks())
	}
	var frames uint64
	err = c.Play(ctx, func(f *media.Frame) {
		if frames == 0 {
			p.setState(PullerPlaying, nil)
		}
		frames++
		p.mu.Lock()
		p.status.Frames++
		p.mu.Unlock()
		p.cfg.OnFrame(f)
	})
	if err != nil {
		return false, err
	}
	err = c.Run(ctx)
	p.mu.Lock()
	p.status.Lost += c.Stats().Lost
	p.mu.Unlock()
	if ctx.Err() != nil {
		c.Teardown()
	}
	if err == nil {
		err = fmt.Errorf("%w: stream ended", rtsp.ErrClosed)
	}
	return frames > 0, err
}
