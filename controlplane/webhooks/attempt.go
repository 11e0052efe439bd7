package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// attempt makes one POST of a claimed delivery and hands the outcome to
// the result writer.
func (s *session) attempt(ctx context.Context, key string, claimRev int64, rec Delivery, event []byte, p Plan) {
	defer s.wg.Done()
	res := result{key: key, claimRev: claimRev, rec: rec, at: s.d.Clock.Now().UTC()}
	start := time.Now()
	s.post(ctx, &res, event, p)
	res.took = time.Since(start)
	s.d.sent.Add(1)
	s.release(p.ID)
	s.results <- res
}

// post fills res with the outcome of the HTTP exchange.
func (s *session) post(ctx context.Context, res *result, event []byte, p Plan) {
	if event == nil {
		res.err, res.gone = "the event is no longer in the outbox (removed by retention)", true
		return
	}
	entry, err := events.DecodeEntry(event)
	if err != nil {
		res.err, res.gone = "the stored event cannot be read: "+err.Error(), true
		return
	}
	secret, err := s.d.secret(p)
	if err != nil {
		res.err, res.gone = "the plan's secret cannot be opened with this cluster's keys", true
		return
	}
	env := entry.Envelope
	env.Data = events.Redact(env.Data)
	body, err := json.Marshal(env)
	if err != nil {
		res.err, res.gone = "encoding the event: "+err.Error(), true
		return
	}
	ts := s.d.Clock.Now().Unix()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(p.TimeoutSeconds)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, p.Endpoint, bytes.NewReader(body))
	if err != nil {
		res.err = "building the request: " + err.Error()
		return
	}
	h := req.Header
	h.Set("Content-Type", ContentType)
	h.Set("User-Agent", "svc-webhooks/1")
	h.Set(HeaderEvent, env.EventName)
	h.Set(HeaderEventID, env.EventID)
	h.Set(HeaderSubscriptionID, string(p.ID))
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, Sign(secret, ts, body))
	h.Set(HeaderIdempotencyKey, env.EventID)
	resp, err := s.d.client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			res.err = fmt.Sprintf("timeout: no answer within %d s", p.TimeoutSeconds)
		case errors.Is(err, ErrTargetRefused):
			res.err = "refused: the endpoint resolves to an address plans may not target"
		default:
			res.err = networkSummary(err)
		}
		return
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return
	}
	// The receiver's answer is not kept: its body (and the details of a
	// network error) would show anyone who reads the delivery history what
	// the receiver, or whatever else answers at that address, says.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	res.err = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
	res.retry = retryAfter(resp.Header.Get("Retry-After"), s.d.Clock.Now())
}

// networkSummary is a fixed description of a failed connection, without
// the error's own text (addresses, ports, TLS details).
func networkSummary(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns):
		return "network error: the endpoint's host name does not resolve"
	case errors.As(err, &cert):
		return "network error: the endpoint's TLS certificate is not trusted"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "network error: connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "network error: the connection was closed before an answer"
	case errors.As(err, &op) && op.Op == "dial":
		return "network error: the endpoint cannot be reached"
	}
	return "network error"
}

// retryAfter reads a Retry-After header (seconds or an HTTP date).
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(min(n, int(BackoffCap/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), BackoffCap)
	}
	return 0
}

// secret opens a plan's secret, caching by the sealed text so a rotation
// is picked up at once.
func (d *Dispatcher) secret(p Plan) ([]byte, error) {
	if v, ok := d.secrets.Load(p.SealedSecret); ok {
		return v.([]byte), nil
	}
	b, err := d.Keys.Open(p.SealedSecret, []byte(p.key()))
	if err != nil {
		return nil, err
	}
	d.secrets.Store(p.SealedSecret, b)
	return b, nil
}

// resultLoop records outcomes in batches: one Txn for everything that
// finished since the last one.
func (s *session) resultLoop() {
	for res := range s.results {
		batch := []result{res}
	more:
		for len(batch) < 256 {
			select {
			case r, ok := <-s.results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		// Writes outlive the leadership context briefly, so a graceful
		// hand-over records what was sent instead of sending it again.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.record(ctx, batch)
		cancel()
	}
}

// record writes a batch of outcomes, each guarded by the mod revision of
// its claim; when the batch conflicts it falls back to one Txn each.
func (s *session) record(ctx context.Context, batch []result) {
	plans, err := s.plans(ctx)
	if err != nil {
		s.d.Log.Warn("recording webhook outcomes: reading plans failed", zap.Error(err))
		return
	}
	byID := planIndex(plans)
	// The cache follows a watch, which can lag: a plan created just before
	// its first event may be missing from it, and a missing plan reads as
	// archived (its delivery canceled). Read the plans again before
	// concluding that.
	for i := range batch {
		if _, ok := byID[batch[i].rec.SubscriptionID]; !ok {
			s.forgetPlans()
			if plans, err = s.plans(ctx); err != nil {
				s.d.Log.Warn("recording webhook outcomes: reading plans failed", zap.Error(err))
				return
			}
			byID = planIndex(plans)
			break
		}
	}
	var req store.TxnRequest
	for i := range batch {
		op, err := s.outcome(&batch[i], byID)
		if err != nil {
			continue
		}
		req.Compares = append(req.Compares, store.ModRevisionIs(batch[i].key, batch[i].claimRev))
		req.Then = append(req.Then, op)
	}
	if len(req.Then) == 0 {
		return
	}
	resp, err := s.d.Store.Txn(ctx, req)
	if err == nil && resp.Succeeded {
		return
	}
	if len(batch) == 1 {
		if err != nil {
			s.d.Log.Warn("recording a webhook outcome failed; the next leader retries the delivery", zap.String("delivery", batch[0].key), zap.Error(err))
		}
		return
	}
	for i := range batch {
		s.record(ctx, batch[i:i+1])
	}
}

// planIndex maps plans by id.
func planIndex(plans []planAt) map[PlanID]planAt {
	byID := make(map[PlanID]planAt, len(plans))
	for _, p := range plans {
		byID[p.ID] = p
	}
	return byID
}

// outcome applies the transition table to one result and returns the put.
func (s *session) outcome(res *result, plans map[PlanID]planAt) (store.Op, error) {
	r := &res.rec
	now := s.d.Clock.Now().UTC()
	p, ok := plans[r.SubscriptionID]
	r.Claim, r.UpdatedAt = nil, now
	if res.status != 0 {
		st := res.status
		r.LastHTTPStatus = &st
	}
	r.Log = append(r.Log, Attempt{At: res.at, HTTPStatus: res.status, DurationMs: res.took.Milliseconds(), Error: bound(res.err)})
	if len(r.Log) > attemptLogSize {
		r.Log = r.Log[len(r.Log)-attemptLogSize:]
	}
	switch {
	case res.err == "":
		r.State, r.ErrorSummary, r.DueMs, r.NextAttemptAt = StateCompleted, "", 0, nil
	case !ok || p.Archived:
		r.State, r.ErrorSummary, r.DueMs, r.NextAttemptAt = StateCanceled, bound(res.err+" (plan archived: no retry)"), 0, nil
	case res.gone || r.Attempts-r.RoundStart >= p.MaxAttempts:
		r.State, r.ErrorSummary, r.DueMs, r.NextAttemptAt = StateFailed, bound(res.err), 0, nil
	default:
		wait := Backoff(r.Attempts-r.RoundStart, s.d.Random(), res.retry)
		next := now.Add(wait)
		r.State, r.ErrorSummary, r.DueMs, r.NextAttemptAt = StateWaitingRetry, bound(res.err), next.UnixMilli(), &next
	}
	return r.put()
}
