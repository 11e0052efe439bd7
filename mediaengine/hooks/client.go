package hooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/engineapi"
)

// eventQueue bounds the event hooks waiting to be sent; eventWorkers send
// them.
const (
	eventQueue   = 1024
	eventWorkers = 4
	maxAnswer    = 64 << 10
)

// Client sends the engine's hooks.
type Client struct {
	// urls are the hook base URLs of the control nodes, the configured one
	// first; preferred is the index of the one that answered last, and
	// downUntil (unix nanoseconds, per URL) skips one that just failed.
	urls      []string
	preferred atomic.Int32
	downUntil []atomic.Int64
	header    engineapi.HookHeader
	secret    string
	cfg       engineapi.HookConfig
	http      *http.Client
	cache     allowCache
	log       *zap.Logger

	events chan event
	wg     sync.WaitGroup
	// mu guards closing events against a concurrent enqueue.
	mu     sync.RWMutex
	closed bool

	calls, failures, dropped atomic.Uint64
	passwords                passwordCache
}

type event struct {
	name string
	body any
	// then, when set, receives the answer of the event hook.
	then func(engineapi.HookAnswer)
}

// New makes a client from the engine's configuration and starts its event
// workers; Close stops them.
func New(cfg engineapi.Config, log *zap.Logger) (*Client, error) {
	hc := cfg.Hooks
	c := &Client{cfg: hc, log: log.Named("hooks"),
		header: engineapi.HookHeader{MediaServerID: cfg.MediaServerID, NodeID: cfg.NodeID},
		cache:  allowCache{ttl: hc.AllowCacheTTL.D(), m: map[string]cacheEntry{}}, events: make(chan event, eventQueue)}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if hc.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(hc.ClientCertFile, hc.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("hooks: client certificate: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	if hc.CAFile != "" {
		pem, err := os.ReadFile(hc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("hooks: CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("hooks: %s holds no PEM certificate", hc.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if hc.SecretFile != "" {
		s, err := engineapi.ReadSecret(hc.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("hooks: secret: %w", err)
		}
		c.secret = s
	}
	if hc.URL != "" {
		for _, u := range append([]string{hc.URL}, hc.FallbackURLs...) {
			c.urls = append(c.urls, strings.TrimRight(u, "/"))
		}
		c.downUntil = make([]atomic.Int64, len(c.urls))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	// A control node that is down must cost a hook a fraction of its
	// timeout, so the next node can still answer in time.
	dialer := &net.Dialer{Timeout: dialTimeout(hc.Timeout.D(), len(c.urls)), KeepAlive: 30 * time.Second}
	tr.DialContext = dialer.DialContext
	tr.TLSHandshakeTimeout = dialer.Timeout
	tr.MaxIdleConnsPerHost = 16
	// A burst of players must not open a connection each: the agent port
	// caps the connections one client address holds.
	tr.MaxConnsPerHost = 64
	c.http = &http.Client{Transport: tr, Timeout: hc.Timeout.D(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 0; i < eventWorkers; i++ {
		c.wg.Add(1)
		go c.sendEvents()
	}
	return c, nil
}

// Enabled reports whether hooks go anywhere.
func (c *Client) Enabled() bool { return len(c.urls) > 0 }

// dialTimeout shares a hook's timeout between the control nodes it may
// have to try, with at least 250 ms and at most a second for each.
func dialTimeout(timeout time.Duration, nodes int) time.Duration {
	d := timeout / time.Duration(max(nodes, 1))
	return min(max(d, 250*time.Millisecond), time.Second)
}

// downFor is how long a control node that failed is tried last.
const downFor = 5 * time.Second

// Counters reports hook calls made and failed, and events dropped because
// the queue was full.
func (c *Client) Counters() (calls, failures, dropped uint64) {
	return c.calls.Load(), c.failures.Load(), c.dropped.Load()
}

// Close stops the event workers after the queued events are sent.
func (c *Client) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.events)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// AllowPlay is the on_play gate.
func (c *Client) AllowPlay(ctx context.Context, req engineapi.PlayHook) (engineapi.HookAnswer, error) {
	req.HookHeader = c.stamp()
	return c.gate(ctx, engineapi.HookOnPlay, req.StreamRef, req.Protocol, req.Params, req)
}

// ForgetLease drops cached answers of a lease (its players are being
// kicked because it ended).
func (c *Client) ForgetLease(leaseID string) { c.cache.forgetLease(leaseID) }

// AllowPublish is the on_publish gate.
func (c *Client) AllowPublish(ctx context.Context, req engineapi.PublishHook) (engineapi.HookAnswer, error) {
	req.HookHeader = c.stamp()
	return c.gate(ctx, engineapi.HookOnPublish, req.StreamRef, req.Protocol, req.Params, req)
}

func (c *Client) gate(ctx context.Context, name string, s engineapi.StreamRef, protocol string, params map[string]string, body any) (engineapi.HookAnswer, error) {
	if !c.Enabled() {
		return engineapi.HookAnswer{Allow: true}, nil
	}
	key := cacheKey(name, s, protocol, params)
	if ans, ok := c.cache.get(key, time.Now()); ok {
		return ans, nil
	}
	ans, err := c.post(ctx, name, body)
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	c.cache.put(key, ans, time.Now())
	return ans, nil
}

func (c *Client) stamp() engineapi.HookHeader {
	h := c.header
	h.SentAt = time.Now().UTC()
	return h
}

// post sends one hook and decodes its answer; an empty 2xx body is an
// answer with every field zero.
func (c *Client) post(ctx context.Context, name string, body any) (engineapi.HookAnswer, error) {
	c.calls.Add(1)
	ans, err := c.do(ctx, name, body)
	if err != nil {
		c.failures.Add(1)
		c.log.Warn("hook failed", zap.String("hook", name), zap.Error(err))
	}
	return ans, err
}

// do sends a hook to the control node that answered last and, when that
// one cannot be reached or answers that it cannot serve (502, 503, 504), to
// the next, all within the hook's timeout. Hooks are safe to repeat: a
// decision is read again, and a report applied twice changes nothing.
func (c *Client) do(ctx context.Context, name string, body any) (engineapi.HookAnswer, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return engineapi.HookAnswer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout.D())
	defer cancel()
	now := time.Now().UnixNano()
	first := int(c.preferred.Load())
	// Nodes that failed lately go after the others, not out: when all of
	// them failed, they are all tried again.
	order := make([]int, 0, len(c.urls))
	var later []int
	for k := range c.urls {
		i := (first + k) % len(c.urls)
		if c.downUntil[i].Load() > now {
			later = append(later, i)
			continue
		}
		order = append(order, i)
	}
	order = append(order, later...)
	var errs []error
	for _, i := range order {
		ans, retry, err := c.try(ctx, c.urls[i], name, b)
		if err == nil {
			c.downUntil[i].Store(0)
			if int(c.preferred.Load()) != i {
				c.preferred.Store(int32(i))
				c.log.Info("hooks now go to another control node", zap.String("url", c.urls[i]))
			}
			return ans, nil
		}
		errs = append(errs, err)
		if !retry || ctx.Err() != nil {
			break
		}
		c.downUntil[i].Store(time.Now().Add(downFor).UnixNano())
	}
	return engineapi.HookAnswer{}, errors.Join(errs...)
}

// try sends a hook to one control node; retry says whether another node
// may answer it (this one could not be reached or cannot serve).
func (c *Client) try(ctx context.Context, base, name string, b []byte) (ans engineapi.HookAnswer, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/"+name, bytes.NewReader(b))
	if err != nil {
		return engineapi.HookAnswer{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.secret != "" {
		req.Header.Set("Authorization", "Bearer "+c.secret)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return engineapi.HookAnswer{}, false, fmt.Errorf("%w (%s): %s: %w", ErrTimeout, c.cfg.Timeout.D(), base, err)
		}
		return engineapi.HookAnswer{}, true, fmt.Errorf("hooks: %s at %s: %w", name, base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return engineapi.HookAnswer{}, true, fmt.Errorf("hooks: %s at %s: reading the answer: %w", name, base, err)
	}
	switch {
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return engineapi.HookAnswer{}, true, fmt.Errorf("%w: %s at %s answered %d", ErrStatus, name, base, resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return engineapi.HookAnswer{}, false, fmt.Errorf("%w: %s at %s answered %d", ErrStatus, name, base, resp.StatusCode)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return ans, false, nil
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return engineapi.HookAnswer{}, false, fmt.Errorf("%w: %w", ErrAnswer, err)
	}
	return ans, false, nil
}

// enqueue queues an event hook; a full queue drops it (counted, logged)
// rather than block media.
func (c *Client) enqueue(e event) {
	if !c.Enabled() {
		return
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		c.dropped.Add(1)
		return
	}
	select {
	case c.events <- e:
	default:
		if c.dropped.Add(1)%100 == 1 {
			c.log.Warn("hook queue full; dropping event hooks", zap.String("hook", e.name), zap.Uint64("dropped", c.dropped.Load()))
		}
	}
}

func (c *Client) sendEvents() {
	defer c.wg.Done()
	for e := range c.events {
		ans, err := c.post(context.Background(), e.name, e.body)
		if err == nil && e.then != nil {
			e.then(ans)
		}
	}
}

// StreamChanged sends on_stream_changed.
func (c *Client) StreamChanged(h engineapi.StreamChangedHook) {
	h.HookHeader = c.stamp()
	c.enqueue(event{name: engineapi.HookOnStreamChanged, body: h})
}

// StreamNoneReader sends on_stream_none_reader; onClose runs when the
// answer asks to close the stream.
func (c *Client) StreamNoneReader(h engineapi.StreamNoneReaderHook, onClose func()) {
	h.HookHeader = c.stamp()
	c.enqueue(event{name: engineapi.HookOnStreamNoneReader, body: h, then: func(a engineapi.HookAnswer) {
		if a.Close {
			onClose()
		}
	}})
}

// FlowReport sends on_flow_report.
func (c *Client) FlowReport(h engineapi.FlowReportHook) {
	h.HookHeader = c.stamp()
	c.enqueue(event{name: engineapi.HookOnFlowReport, body: h})
}

// Keepalive sends on_server_keepalive.
func (c *Client) Keepalive(stats engineapi.Stats) {
	c.enqueue(event{name: engineapi.HookOnServerKeepalive, body: engineapi.KeepaliveHook{HookHeader: c.stamp(), Stats: stats}})
}

// RTPServerTimeout sends on_rtp_server_timeout.
func (c *Client) RTPServerTimeout(h engineapi.RTPServerTimeoutHook) {
	h.HookHeader = c.stamp()
	c.enqueue(event{name: engineapi.HookOnRTPServerTimeout, body: h})
}
