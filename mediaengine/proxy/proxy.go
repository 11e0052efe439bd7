package proxy

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Proxy states as listed.
const (
	StateConnecting = "connecting"
	StateLive       = "live"
	StateRetrying   = "retrying"
	StateFailed     = "failed"
)

// Proxy is one pull proxy: a loop of pull sessions with backoff between
// failed ones.
type Proxy struct {
	req       engineapi.AddProxyRequest
	path      media.Path
	puller    Puller
	hub       *hub.Hub
	log       *zap.Logger
	cancel    context.CancelFunc
	done      chan struct{}
	createdAt time.Time

	mu        sync.Mutex
	state     string
	lastErr   string
	attempts  int
	liveSince *time.Time
}

// Info describes the proxy.
func (p *Proxy) Info() engineapi.ProxyInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return engineapi.ProxyInfo{ID: p.req.ID, URL: engineapi.RedactURL(p.req.URL), Vhost: p.path.Vhost, App: p.path.App,
		Stream: p.path.Stream, State: p.state, LastError: p.lastErr, Attempts: p.attempts, Retry: p.req.Retry,
		CreatedAt: p.createdAt, LiveSince: p.liveSince}
}

func (p *Proxy) set(state string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = state
	if err != nil {
		p.lastErr = err.Error()
	}
	if state == StateLive {
		now := time.Now().UTC()
		p.liveSince, p.attempts = &now, 0
	} else {
		p.liveSince = nil
	}
}

func (p *Proxy) run(ctx context.Context) {
	defer close(p.done)
	backoff := p.req.Retry.InitialBackoff.D()
	for {
		p.mu.Lock()
		p.attempts++
		p.mu.Unlock()
		wasLive, err := p.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if wasLive {
			backoff = p.req.Retry.InitialBackoff.D()
		}
		p.mu.Lock()
		attempts := p.attempts
		p.mu.Unlock()
		if maxAttempts := p.req.Retry.MaxAttempts; maxAttempts > 0 && attempts >= maxAttempts && !wasLive {
			p.set(StateFailed, errors.Join(errGaveUp, err))
			p.log.Warn("pull proxy gave up", zap.Int("attempts", attempts), zap.Error(err))
			return
		}
		p.set(StateRetrying, err)
		p.log.Info("pull ended; retrying", zap.Duration("in", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.req.Retry.MaxBackoff.D())
	}
}

// session runs one pull and reports whether it went live.
func (p *Proxy) session(parent context.Context) (bool, error) {
	var pub *hub.Publisher
	live := false
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	err := p.puller.Pull(ctx, Source{URL: p.req.URL, Transport: p.req.Transport, AllowBasicAuth: p.req.AllowBasicAuth}, func(tracks []*media.Track) (FrameWriter, error) {
		var err error
		pub, err = p.hub.Publish(p.path, hub.Origin{Kind: "pull", URL: engineapi.RedactURL(p.req.URL)}, tracks)
		if err != nil {
			return nil, err
		}
		live = true
		p.set(StateLive, nil)
		go func() { // the stream closed from outside (control API) ends the session
			select {
			case <-pub.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		return pub, nil
	})
	switch {
	case pub == nil:
	case parent.Err() != nil:
		// The proxy was removed (its channel stopped): its players end now
		// rather than wait for a publisher that will not come.
		pub.Stream().Close()
	default:
		// The source dropped; the next session may continue the stream.
		pub.Close()
	}
	return live, err
}
