package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/identity"
)

// RuntimeSockets bounds the life of runtime-state WebSockets: they are
// hijacked connections the HTTP server's Shutdown does not wait for, so
// the server cancels Ctx and waits here instead.
type RuntimeSockets struct {
	Ctx context.Context
	wg  sync.WaitGroup
}

// Wait blocks until every WebSocket handler has returned.
func (r *RuntimeSockets) Wait() { r.wg.Wait() }

// eventEndpoints serves the outbox, the engine webhook inbox and the
// runtime-state WebSocket.
type eventEndpoints struct {
	events  *events.Service
	auth    Authenticator
	sockets *RuntimeSockets
	log     *zap.Logger
	// ping overrides pingEvery (tests).
	ping time.Duration
}

const runtimePath = "/api/v2/events/runtime/ws"

// Keep-alive of runtime-state WebSockets: a ping every pingEvery, which
// also re-checks the credential, so a revoked token loses its stream.
const (
	pingEvery    = 30 * time.Second
	writeTimeout = 10 * time.Second
)

func (e *eventEndpoints) ListEventOutbox(ctx context.Context, r contract.ListEventOutboxRequestObject) (contract.ListEventOutboxResponseObject, error) {
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	list, total, err := events.ListOutbox(requestContext(ctx), e.events.Reader, page, size)
	if err != nil {
		return nil, err
	}
	out := contract.ListEventOutbox200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.OutboxEvent{}}
	for _, en := range list {
		row := contract.OutboxEvent{EventName: en.EventName, OccurredAtUtc: en.OccurredAtUTC, Source: string(en.Source),
			NodeId: en.NodeID, SchemaVersion: int32(en.SchemaVersion), Data: map[string]any{}}
		row.EventId.UnmarshalText([]byte(en.EventID))
		dec := json.NewDecoder(bytes.NewReader(events.Redact(en.Data)))
		dec.UseNumber()
		dec.Decode(&row.Data)
		if en.TargetSubscriptionID != "" {
			t := en.TargetSubscriptionID
			row.TargetSubscriptionId = &t
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}

func (e *eventEndpoints) ListEngineWebhookInbox(ctx context.Context, r contract.ListEngineWebhookInboxRequestObject) (contract.ListEngineWebhookInboxResponseObject, error) {
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	list, total, err := e.events.ListInbox(requestContext(ctx), events.InboxQuery{HookName: deref(r.Params.HookName, ""),
		MediaServerID: deref(r.Params.MediaServerId, ""), Page: page, PageSize: size})
	if err != nil {
		if errors.Is(err, events.ErrInvalid) {
			return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_query", Message: err.Error(), Retryable: retryable(false), Err: err}
		}
		return nil, err
	}
	out := contract.ListEngineWebhookInbox200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.EngineWebhookInboxEntry{}}
	for _, in := range list {
		out.Rows = append(out.Rows, contract.EngineWebhookInboxEntry{Id: in.ID, HookName: in.HookName, ReceivedHookName: in.ReceivedHookName,
			MediaServerId: in.MediaServerID, App: in.App, Stream: in.Stream, ReceivedAt: in.ReceivedAt, RawJson: in.RawJSON})
	}
	return out, nil
}

func (e *eventEndpoints) GetRuntimeStateWebSocketInfo(
	ctx context.Context,
	_ contract.GetRuntimeStateWebSocketInfoRequestObject,
) (contract.GetRuntimeStateWebSocketInfoResponseObject, error) {
	id := identity.From(requestContext(ctx))
	out := contract.GetRuntimeStateWebSocketInfo200JSONResponse{
		Path:        runtimePath,
		Subprotocol: events.RuntimeProtocol,
		Authentication: "Authorization: Bearer <API token> or the console session cookie on the upgrade request; 401 without a valid credential, " +
			"403 when a browser's Origin is not this server, 400 when the request is not a WebSocket upgrade or the cursor is malformed. " +
			"The credential is checked again at every keep-alive; a revoked credential ends the stream with close code 1008.",
		MessageTypes: []contract.RuntimeStateFrameKind{
			{
				Type:        contract.RuntimeStateFrameKindTypeHello,
				Description: "first frame: protocol, resumed (whether the cursor was honoured), seq (last number used) and the cursor to resume from",
			},
			{
				Type:        contract.RuntimeStateFrameKindTypeEvent,
				Description: "one state change: seq, cursor, revision and event (the outbox envelope, redacted), only for families the credential may see",
			},
			{
				Type:        contract.RuntimeStateFrameKindTypeResync,
				Description: "the stream restarted at the current state (history after the cursor is gone): read the state through the API, numbering starts again at 1",
			},
		},
		Sequence: "seq of event frames grows by exactly one per frame sent on this stream; a resumed stream continues the numbers of the stream " +
			"it resumes, so a gap never happens silently",
		Resume: "reconnect with ?cursor=<cursor of the last frame received> to get every later event once, in order; any control node can " +
			"resume any cursor; if resuming is impossible the first frame after hello is resync",
		KeepAlive: "the server pings every 30 s and closes connections that do not answer within 10 s; clients reconnect with backoff and their last cursor",
		Families:  []contract.RuntimeStateFamily{},
	}
	for _, g := range events.Catalog() {
		out.Families = append(out.Families, contract.RuntimeStateFamily{Wildcard: g.Wildcard, Permission: g.Permission, Visible: id.Has(g.Permission)})
	}
	return out, nil
}

// noResponse is the answer of a handler that already wrote (or hijacked)
// the connection.
type noResponse struct{}

func (noResponse) VisitOpenRuntimeStateWebSocketResponse(http.ResponseWriter) error { return nil }

func badUpgrade(msg string) error {
	return &Error{Status: http.StatusBadRequest, Code: "websocket_upgrade_required", Message: msg, Retryable: retryable(false)}
}

// OpenRuntimeStateWebSocket has been through the guard (authenticated, any
// identity), checks the upgrade and the origin, then streams.
func (e *eventEndpoints) OpenRuntimeStateWebSocket(
	ctx context.Context,
	r contract.OpenRuntimeStateWebSocketRequestObject,
) (contract.OpenRuntimeStateWebSocketResponseObject, error) {
	c, ok := ctx.(*gin.Context)
	if !ok {
		return nil, errors.New("runtime WebSocket needs the gin context")
	}
	req := c.Request
	if !headerHas(req.Header, "Connection", "upgrade") || !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		return nil, badUpgrade("this endpoint speaks WebSocket only: send Connection: Upgrade and Upgrade: websocket")
	}
	if req.Header.Get("Sec-WebSocket-Version") != "13" || req.Header.Get("Sec-WebSocket-Key") == "" {
		return nil, badUpgrade("WebSocket version 13 with a Sec-WebSocket-Key is required")
	}
	if origin := req.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, req.Host) {
			return nil, &Error{Status: http.StatusForbidden, Code: "permission_denied", Message: "cross-origin WebSocket requests are refused", Retryable: retryable(false)}
		}
	}
	// The filter follows the credential as it is re-checked at every
	// keep-alive, so a permission taken away stops the events it covered.
	var current atomic.Pointer[identity.Identity]
	current.Store(identity.From(req.Context()))
	allowed := func(p string) bool { return current.Load().Has(p) }
	life, cancel := context.WithCancel(e.sockets.Ctx)
	defer cancel()
	stream, hello, err := e.events.OpenRuntime(life, allowed, deref(r.Params.Cursor, ""))
	if err != nil {
		if errors.Is(err, events.ErrInvalid) {
			return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_query", Message: err.Error(), Retryable: retryable(false), Err: err}
		}
		return nil, err
	}
	defer stream.Close()
	conn, err := websocket.Accept(c.Writer, req, &websocket.AcceptOptions{Subprotocols: []string{events.RuntimeProtocol}, InsecureSkipVerify: true})
	if err != nil {
		return noResponse{}, nil // Accept answered the client itself
	}
	e.sockets.wg.Add(1)
	defer e.sockets.wg.Done()
	// The client sends nothing; reading is only for control frames and
	// notices a close. The reader must not share the server's context:
	// cancelling a read makes the library drop the connection without the
	// close frame that tells clients the server is going away.
	peerGone := conn.CloseRead(context.Background())
	streamCtx, stop := context.WithCancel(life)
	defer stop()
	defer context.AfterFunc(peerGone, stop)()
	err = e.stream(streamCtx, conn, stream, hello, func() error {
		id, err := e.auth.Authenticate(req, net.ParseIP(c.ClientIP()))
		if err != nil || id == nil {
			return errCredentialGone
		}
		current.Store(id)
		return nil
	})
	switch {
	case errors.Is(err, errCredentialGone):
		conn.Close(websocket.StatusPolicyViolation, "credential no longer valid")
	case e.sockets.Ctx.Err() != nil:
		conn.Close(websocket.StatusGoingAway, "server shutting down")
	default:
		conn.CloseNow()
	}
	return noResponse{}, nil
}

var errCredentialGone = errors.New("credential no longer valid")

// stream writes hello and then every message until the connection or the
// server ends; at every keep-alive it calls recheck, which re-authenticates
// the connection's request.
func (e *eventEndpoints) stream(ctx context.Context, conn *websocket.Conn, stream *events.RuntimeStream, hello events.RuntimeMessage, recheck func() error) error {
	// Writes are bounded by writeTimeout only: the library drops the
	// connection, without a close frame, when a write's context ends
	// mid-write, and a server going away must still say so. The loop
	// stops at ctx's end between writes.
	wctxBase := context.WithoutCancel(ctx)
	write := func(m events.RuntimeMessage) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(wctxBase, writeTimeout)
		defer cancel()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	if err := write(hello); err != nil {
		return err
	}
	msgs := make(chan events.RuntimeMessage)
	errc := make(chan error, 1)
	go func() {
		for {
			m, err := stream.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
	}()
	every := pingEvery
	if e.ping > 0 {
		every = e.ping
	}
	ping := time.NewTicker(every)
	defer ping.Stop()
	for {
		select {
		case m := <-msgs:
			if err := write(m); err != nil {
				return err
			}
		case err := <-errc:
			return err
		case <-ping.C:
			if err := recheck(); err != nil {
				return err
			}
			pctx, cancel := context.WithTimeout(wctxBase, writeTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
}

// headerHas reports whether a comma-separated header lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}
