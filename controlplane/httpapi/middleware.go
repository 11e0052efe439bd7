package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/identity"
)

const (
	traceHeader = "X-Trace-Id"
	ctxTrace    = "svc.trace"
	ctxOp       = "svc.operation"
)

var traceRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

func traceID(c *gin.Context) string { return c.GetString(ctxTrace) }

// withTrace gives every request a trace id (the caller's, when well formed)
// and returns it on every response.
func withTrace() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := strings.ToLower(c.GetHeader(traceHeader))
		if !traceRe.MatchString(id) {
			var b [16]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(ctxTrace, id)
		c.Header(traceHeader, id)
		c.Next()
	}
}

// recovery turns a panic into a logged 500 with the error body.
func recovery(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", zap.Any("panic", r), zap.String("traceId", traceID(c)), zap.Stack("stack"))
				abortWithError(c, newError(http.StatusInternalServerError, "internal", "internal error"))
			}
		}()
		c.Next()
	}
}

// Metrics are the API's Prometheus collectors.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the API collectors on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "API requests by operation and status code.",
		}, []string{"operation", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "API request latency by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// accessLog records one structured line and the metrics per request. Query
// strings are not logged: they can carry tickets.
func accessLog(log *zap.Logger, m *Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		op := "unmatched"
		if o, ok := c.Get(ctxOp); ok {
			op = o.(*Operation).ID
		} else if fp := c.FullPath(); fp != "" {
			op = fp
		}
		status := c.Writer.Status()
		elapsed := time.Since(start)
		m.requests.WithLabelValues(op, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(op).Observe(elapsed.Seconds())
		fields := []zap.Field{
			zap.String("traceId", traceID(c)), zap.String("method", c.Request.Method),
			zap.String("path", c.Request.URL.Path), zap.String("operation", op),
			zap.Int("status", status), zap.Duration("latency", elapsed),
			zap.String("client", c.ClientIP()), zap.Int("bytes", c.Writer.Size()),
		}
		if id := identity.From(c.Request.Context()); id != nil {
			fields = append(fields, zap.String("credential", string(id.Kind)+":"+id.CredentialID))
		}
		if len(c.Errors) > 0 {
			fields = append(fields, zap.String("error", c.Errors.String()))
		}
		switch {
		case status >= 500:
			log.Error("request", fields...)
		case status >= 400:
			log.Info("request", fields...)
		default:
			log.Debug("request", fields...)
		}
	}
}

// Authenticator resolves the credentials of a request, returning nil (and
// no error) for an anonymous request.
type Authenticator interface {
	Authenticate(r *http.Request, clientIP net.IP) (*identity.Identity, error)
}

// guard finds the contract operation of the matched route, authenticates,
// enforces x-svc-permission (deny by default), bounds the body, checks its
// content type and validates the request against the contract.
// guardConfig is what the guard needs.
type guardConfig struct {
	ops     *Operations
	auth    Authenticator
	maxBody int64
	barrier func(context.Context) error
	denials *DenialAuditor
	// local tells a request from this host (see LocalAccess).
	local *LocalAccess
}

func guard(g guardConfig) gin.HandlerFunc {
	ops, auth, maxBody, barrier := g.ops, g.auth, g.maxBody, g.barrier
	return func(c *gin.Context) {
		op := ops.Lookup(c.Request.Method, c.FullPath())
		if op == nil {
			// Only routes of the contract reach this middleware.
			abortWithError(c, newError(http.StatusForbidden, "permission_denied", "this route is not part of the contract"))
			return
		}
		c.Set(ctxOp, op)
		if op.LocalOnly {
			if err := g.local.check(c); err != nil {
				abortWithError(c, err)
				return
			}
		}
		if op.DeviceCredential() || (op.Credential == CredentialBusinessOrArchive && presentsArchiveTicket(c.Request)) {
			// A meeting device's own credential (participant token, access
			// ticket), which the operation checks against its room; no
			// platform credential stands in for it, so none is looked at.
			if err := admitBody(c, op, maxBody); err != nil {
				abortWithError(c, err)
				return
			}
			c.Next()
			return
		}
		id, err := auth.Authenticate(c.Request, net.ParseIP(c.ClientIP()))
		if err != nil && !op.Public {
			abortWithError(c, err)
			return
		}
		if id != nil {
			c.Request = c.Request.WithContext(identity.With(c.Request.Context(), id))
		}
		if !op.Public {
			if id == nil {
				abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "this operation needs an API token or a console session"))
				return
			}
			if op.Permission == "" || !id.Has(op.Permission) {
				msg := fmt.Sprintf("this operation needs permission %q", op.Permission)
				g.denials.Record(audit.Record{EventType: "security.permission_denied", Outcome: audit.Denied, ActorType: string(id.Kind),
					ActorID: id.CredentialID, ClientAddress: c.ClientIP(), TraceID: traceID(c), Target: op.Method + " " + op.Path, Message: msg})
				abortWithError(c, &Error{Status: http.StatusForbidden, Code: "permission_denied", Message: msg, Retryable: retryable(false)})
				return
			}
			if op.Credential == "api-token" && id.Kind != identity.KindAPIToken {
				abortWithError(
					c,
					&Error{Status: http.StatusUnauthorized, Code: "api_token_required", Message: "this operation accepts only API tokens", Retryable: retryable(false)},
				)
				return
			}
			if op.Credential == "console-session" && id.Kind != identity.KindSession {
				abortWithError(
					c,
					&Error{
						Status:    http.StatusForbidden,
						Code:      "permission_denied",
						Message:   "this operation is for console sessions; integrations use the offline contract",
						Retryable: retryable(false),
					},
				)
				return
			}
		}
		if err := admitBody(c, op, maxBody); err != nil {
			abortWithError(c, err)
			return
		}
		if err := consistency(c, barrier); err != nil {
			abortWithError(c, err)
			return
		}
		c.Next()
	}
}

// admitBody bounds the body (413), checks its content type (415) and
// validates the request against the contract (400).
func admitBody(c *gin.Context, op *Operation, maxBody int64) error {
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	}
	if c.Request.ContentLength > maxBody {
		return newError(http.StatusRequestEntityTooLarge, "payload_too_large", fmt.Sprintf("request bodies are limited to %d bytes", maxBody))
	}
	if op.JSONBody && (!op.BodyOptional || c.Request.ContentLength != 0) {
		mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
		if err != nil || mt != "application/json" {
			return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as application/json")
		}
	}
	if op.BodyType != "" && !op.JSONBody {
		if name, ok := op.unknownQuery(c.Request.URL.Query()); ok {
			return &Error{Status: http.StatusBadRequest, Code: "invalid_query", Retryable: retryable(false),
				Message: fmt.Sprintf("unknown query parameter %q; this operation takes: %s", truncateName(name), op.queryNames())}
		}
		mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
		if err != nil || mt != op.BodyType {
			return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as "+op.BodyType)
		}
	}
	return validate(c, op)
}

// ConsistencyHeader asks for a linearizable read: the answering node first
// applies everything the leader had committed when the request arrived.
const ConsistencyHeader = "X-Svc-Consistency"

func consistency(c *gin.Context, barrier func(context.Context) error) error {
	switch strings.ToLower(c.GetHeader(ConsistencyHeader)) {
	case "", "local":
		return nil
	case "linearizable":
		return barrier(c.Request.Context())
	}
	return &Error{Status: http.StatusBadRequest, Code: "invalid_header", Message: ConsistencyHeader + " must be local or linearizable", Retryable: retryable(false)}
}

func validate(c *gin.Context, op *Operation) error {
	if name, ok := op.unknownQuery(c.Request.URL.Query()); ok {
		return &Error{Status: http.StatusBadRequest, Code: "invalid_query", Retryable: retryable(false),
			Message: fmt.Sprintf("unknown query parameter %q; this operation takes: %s", truncateName(name), op.queryNames())}
	}
	params := map[string]string{}
	for _, p := range c.Params {
		params[p.Key] = p.Value
	}
	in := &openapi3filter.RequestValidationInput{
		Request: c.Request, PathParams: params, Route: op.route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false},
	}
	err := openapi3filter.ValidateRequest(c.Request.Context(), in)
	if err == nil {
		return nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return newError(http.StatusRequestEntityTooLarge, "payload_too_large", fmt.Sprintf("request bodies are limited to %d bytes", mbe.Limit))
	}
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		if re.Parameter != nil {
			return &Error{
				Status:    http.StatusBadRequest,
				Code:      "invalid_query",
				Message:   fmt.Sprintf("parameter %q: %s", re.Parameter.Name, reason(re)),
				Retryable: retryable(false),
			}
		}
		return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "request body: " + reason(re), Retryable: retryable(false)}
	}
	return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: err.Error(), Retryable: retryable(false)}
}

// truncateName keeps a caller's parameter name short in the message.
func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// reason keeps validation messages short and free of the echoed input.
func reason(re *openapi3filter.RequestError) string {
	msg := re.Reason
	if re.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += re.Err.Error()
	}
	if i := strings.Index(msg, "\nValue:"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "\nSchema:"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}
