// Package agentport is the control node's agent port: HTTPS with mutual
// TLS under the cluster CA, where node agents enroll, renew their
// certificates, long-poll their node commands, report results, heartbeats
// and engine transitions, and where the engines post their hooks. Every
// request but the CA download and enrollment must present a node
// certificate, and the node's record is checked on each one, so a retired
// node is refused at once on every control node.
package agentport

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/connguard"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Deps are what the agent port serves from.
type Deps struct {
	Log       *zap.Logger
	Authority *clusterca.Authority
	Nodes     *nodes.Service
	Commands  *nodecommand.Service
	Presence  *nodes.Presence
	// Hooks receives the engines' hooks; nil only logs them (SetHooks
	// changes it later).
	Hooks HookInbox
	// ServerURLs lists the agent port URLs of every control node.
	ServerURLs func(ctx context.Context) []string
	// Broadcast passes a heartbeat to the other control nodes; nil on a
	// single node.
	Broadcast func(nodeID string, hb agentapi.Heartbeat, receivedAt time.Time)
	// BaseContext ends every request's context when canceled, so long polls
	// return at shutdown.
	BaseContext context.Context
	// BodyTimeout is the time a client has to send a request body
	// (connguard.BodyDeadline); 0 leaves it unbounded.
	BodyTimeout time.Duration
}

// Server is the running agent port.
type Server struct {
	d     Deps
	hooks atomic.Pointer[HookInbox]
	http  *http.Server
	done  chan struct{}
	ln    net.Listener
	// enrollments limits enrollment attempts per client address, and
	// refusals writes one log line per window instead of one per attempt:
	// the port is open to anyone who reaches it.
	enrollments *ratelimit.Limiter
	refusals    refusalLog
}

// SetHooks hands the engines' hooks to an inbox from now on.
func (s *Server) SetHooks(h HookInbox) { s.hooks.Store(&h) }

// Start serves the agent port on ln with certificates from certs.
func Start(d Deps, ln net.Listener, certs *clusterca.ServerCertificates) *Server {
	s := &Server{d: d, done: make(chan struct{}), enrollments: ratelimit.New(enrollPerMinute, enrollBurst),
		refusals: refusalLog{log: d.Log, window: time.Minute}}
	if d.Hooks != nil {
		s.SetHooks(d.Hooks)
	}
	base := d.BaseContext
	if base == nil {
		base = context.Background()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+agentapi.PathCA, s.handleCA)
	mux.HandleFunc("POST "+agentapi.PathEnroll, s.handleEnroll)
	mux.Handle("POST "+agentapi.PathRenew, s.node(s.handleRenew))
	mux.Handle("POST "+agentapi.PathPoll, s.node(s.handlePoll))
	mux.Handle("POST "+agentapi.PathCommandRunning, s.node(s.handleRunning))
	mux.Handle("POST "+agentapi.PathCommandResult, s.node(s.handleResult))
	mux.Handle("POST "+agentapi.PathCommandSecret, s.node(s.handleSecret))
	mux.Handle("POST "+agentapi.PathHeartbeat, s.node(s.handleHeartbeat))
	mux.Handle("POST "+agentapi.PathEngineTransition, s.node(s.handleTransition))
	mux.Handle("POST "+agentapi.PathEngineHooks+"/{hookName}", s.node(s.handleHook))
	tlsCfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: certs.Get,
		// The client CA pool is built per handshake, so the port can start
		// before the first leader has made the CA.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ca, err := d.Authority.CA(ctx)
			if err != nil {
				return nil, err
			}
			return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.Get, ClientCAs: ca.Pool(),
				ClientAuth: tls.VerifyClientCertIfGiven}, nil
		},
	}
	s.ln = tls.NewListener(ln, tlsCfg)
	s.http = &http.Server{Handler: connguard.BodyDeadline(mux, d.BodyTimeout), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute,
		ErrorLog: zap.NewStdLog(d.Log.Named("tls")), BaseContext: func(net.Listener) context.Context { return base }}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.Log.Error("agent port stopped", zap.Error(err))
		}
	}()
	return s
}

// Shutdown stops accepting and waits for running requests (long polls end
// when ctx does).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	<-s.done
	return err
}

type nodeHandler func(w http.ResponseWriter, r *http.Request, rec *nodes.Record)

// node authenticates a request by its verified client certificate and the
// node's current record.
func (s *Server) node(h nodeHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			writeError(w, http.StatusUnauthorized, agentapi.CodeUnauthorized, "a node certificate issued by the cluster CA is required")
			return
		}
		cert := r.TLS.VerifiedChains[0][0]
		nodeID, err := nodeIDOf(cert)
		if err != nil {
			writeError(w, http.StatusUnauthorized, agentapi.CodeUnauthorized, err.Error())
			return
		}
		rec, err := s.d.Nodes.Authorize(r.Context(), nodeID, cert.NotBefore)
		if err != nil {
			s.d.Log.Info("agent request refused", zap.String("agentNode", nodeID), zap.String("path", r.URL.Path), zap.Error(err))
			s.fail(w, err)
			return
		}
		h(w, r, rec)
	})
}

// fail maps domain errors to the agent port's error codes.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, nodes.ErrRetired):
		writeError(w, http.StatusForbidden, agentapi.CodeNodeRetired, err.Error())
	case errors.Is(err, nodes.ErrSuperseded), errors.Is(err, nodes.ErrNotFound), errors.Is(err, nodes.ErrNotEnrolled):
		writeError(w, http.StatusForbidden, agentapi.CodeCertSuperseded, err.Error())
	case errors.Is(err, nodes.ErrCodeRefused):
		writeError(w, http.StatusForbidden, agentapi.CodeCodeRefused, err.Error())
	case errors.Is(err, nodes.ErrInvalid), errors.Is(err, nodecommand.ErrInvalid), errors.Is(err, errBadBody):
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, err.Error())
	case errors.Is(err, nodecommand.ErrNotFound):
		writeError(w, http.StatusNotFound, agentapi.CodeNotFound, err.Error())
	case errors.Is(err, nodecommand.ErrNotHeld):
		writeError(w, http.StatusConflict, agentapi.CodeConflict, err.Error())
	case errors.Is(err, clusterca.ErrNotReady), errors.Is(err, store.ErrNoLeader), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, agentapi.CodeUnavailable, err.Error())
	default:
		s.d.Log.Error("agent port request failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
	}
}

var errBadBody = errors.New("request body")

// readJSON decodes a bounded body, refusing unknown fields.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, agentapi.MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", errBadBody, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the JSON object", errBadBody)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, agentapi.Error{Code: code, Message: msg})
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
