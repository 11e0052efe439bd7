package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Default retry policy values for fields a request leaves zero.
const (
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
)

// Registry runs the pull proxies.
type Registry struct {
	hub     *hub.Hub
	pullers map[string]Puller
	log     *zap.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	proxies map[string]*Proxy
}

// NewRegistry makes a registry publishing into h, with a Puller per URL
// scheme; Close stops every proxy.
func NewRegistry(h *hub.Hub, pullers map[string]Puller, log *zap.Logger) *Registry {
	ctx, cancel := context.WithCancel(context.Background())
	return &Registry{hub: h, pullers: pullers, log: log.Named("proxy"), ctx: ctx, cancel: cancel, proxies: map[string]*Proxy{}}
}

// Add starts a proxy. Adding an id again with the same source and path is
// idempotent and answers the running proxy.
func (r *Registry) Add(req engineapi.AddProxyRequest) (engineapi.ProxyInfo, error) {
	if err := validate(&req); err != nil {
		return engineapi.ProxyInfo{}, err
	}
	u, _ := url.Parse(req.URL)
	puller, ok := r.pullers[strings.ToLower(u.Scheme)]
	if !ok {
		return engineapi.ProxyInfo{}, fmt.Errorf("%w: %q", ErrUnsupported, u.Scheme)
	}
	path := hub.Key(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream})
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.proxies[req.ID]; ok {
		if p.req.URL == req.URL && p.req.AllowBasicAuth == req.AllowBasicAuth && p.path == path {
			return p.Info(), nil
		}
		return engineapi.ProxyInfo{}, ErrExists
	}
	for _, p := range r.proxies {
		if p.path == path {
			return engineapi.ProxyInfo{}, fmt.Errorf("%w: %s", ErrPathTaken, p.req.ID)
		}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	p := &Proxy{req: req, path: path, puller: puller, hub: r.hub, log: r.log.With(zap.String("proxy", req.ID)),
		cancel: cancel, done: make(chan struct{}), createdAt: time.Now().UTC(), state: StateConnecting}
	r.proxies[req.ID] = p
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		p.run(ctx)
	}()
	return p.Info(), nil
}

func validate(req *engineapi.AddProxyRequest) error {
	if req.ID == "" || len(req.ID) > 128 {
		return fmt.Errorf("%w: id is required (at most 128 characters)", ErrInvalid)
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("%w: url %q is not an absolute URL", ErrInvalid, engineapi.RedactURL(req.URL))
	}
	if req.App == "" || req.Stream == "" {
		return fmt.Errorf("%w: app and stream are required", ErrInvalid)
	}
	switch req.Transport {
	case "", "auto", "tcp", "udp":
	default:
		return fmt.Errorf("%w: transport %q is not auto, tcp or udp", ErrInvalid, req.Transport)
	}
	rp := &req.Retry
	if rp.MaxAttempts < 0 || rp.InitialBackoff < 0 || rp.MaxBackoff < 0 {
		return fmt.Errorf("%w: retry values must not be negative", ErrInvalid)
	}
	if rp.InitialBackoff == 0 {
		rp.InitialBackoff = engineapi.Duration(DefaultInitialBackoff)
	}
	if rp.MaxBackoff == 0 {
		rp.MaxBackoff = engineapi.Duration(DefaultMaxBackoff)
	}
	if rp.MaxBackoff < rp.InitialBackoff {
		return fmt.Errorf("%w: retry.maxBackoff is below retry.initialBackoff", ErrInvalid)
	}
	return nil
}

// Remove stops a proxy and closes its stream.
func (r *Registry) Remove(id string) error {
	r.mu.Lock()
	p, ok := r.proxies[id]
	delete(r.proxies, id)
	r.mu.Unlock()
	if !ok {
		return ErrNotFound
	}
	p.cancel()
	<-p.done
	return nil
}

// ByPath returns the id of the proxy pulling into path.
func (r *Registry) ByPath(path media.Path) (string, bool) {
	path = hub.Key(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, p := range r.proxies {
		if p.path == path {
			return id, true
		}
	}
	return "", false
}

// List describes the proxies, ordered by id.
func (r *Registry) List() []engineapi.ProxyInfo {
	r.mu.Lock()
	out := make([]engineapi.ProxyInfo, 0, len(r.proxies))
	for _, p := range r.proxies {
		out = append(out, p.Info())
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len is the number of proxies.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.proxies)
}

// Close stops every proxy and waits for them.
func (r *Registry) Close() {
	r.cancel()
	r.wg.Wait()
}

// errGaveUp ends a proxy whose retries are exhausted.
var errGaveUp = errors.New("proxy: retries exhausted")
