package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/contractaudit"
	"github.com/svcplatform/svc/controlplane/engines"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/monitoring"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/controlplane/rtpports"
	"github.com/svcplatform/svc/controlplane/rtspauth"
	"github.com/svcplatform/svc/controlplane/session"
	"github.com/svcplatform/svc/controlplane/snapshots"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/storeaudit"
	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/controlplane/talk"
	"github.com/svcplatform/svc/controlplane/tasks"
	"github.com/svcplatform/svc/controlplane/transcoder"
	"github.com/svcplatform/svc/controlplane/tuning"
	"github.com/svcplatform/svc/controlplane/webhooks"
)

// Deps are what the HTTP boundary needs.
type Deps struct {
	Ops            *Operations
	Auth           Authenticator
	Log            *zap.Logger
	Registry       *prometheus.Registry
	MaxBodyBytes   int64
	TrustedProxies []string
	// ClientIPHeaders are read, in order, for a trusted proxy's client.
	ClientIPHeaders []string
	System          *system.Service
	Cluster         *cluster.Service
	StoreAudit      *storeaudit.Auditor
	Retention       *retention.Cleaner
	Tasks           *tasks.Registry
	ContractAudit   *contractaudit.Auditor
	Node            *raftnode.Node
	LinkKeys        [][]byte
	ContractYAML    []byte
	Denials         *DenialAuditor
	Tokens          *apitoken.Service
	Accounts        *account.Service
	RTSPAuth        *rtspauth.Service
	Sessions        *session.Service
	Playback        *playback.Service
	Streams         *streams.Service
	Snapshots       *snapshots.Service
	Proxies         *ProxyTrust
	Channels        *channels.Service
	// GB28181 is the node's SIP server and GBPlayback its history playback
	// sessions (nil: no SIP server).
	GB28181    *gb28181.Service
	GBPlayback *streams.GBPlayback
	// Talk holds the node's intercom sessions.
	Talk *talk.Service
	// Recording and its auto-record pass (issue 17).
	Recording  *recording.Service
	AutoRecord *recording.Reconciler
	// Rooms are the meeting rooms (issue 19).
	Rooms *rooms.Service
	// LoginRatePerMinute bounds logins per client address and per user name.
	LoginRatePerMinute int
	Events             *events.Service
	Webhooks           *webhooks.Service
	// Dispatcher reports whether the webhook dispatcher runs on this node
	// and how many POSTs it has in flight.
	Dispatcher func() (running bool, inFlight int64)
	// Sockets bounds the runtime-state WebSockets' lifetime.
	Sockets *RuntimeSockets
	// The node agent side (issue 4).
	Nodes        *nodes.Service
	Presence     *nodes.Presence
	Commands     *nodecommand.Service
	MediaServers *mediaserver.Service
	Tuning       *tuning.Service
	RTPPorts     *rtpports.Service
	Engines      *engines.Service
	Templates    *transcoder.Service
	Monitor      *monitoring.Monitor
	Authority    *clusterca.Authority
	// AgentURL is the agent port URL enrollment commands name.
	AgentURL string
	// NodeTTL is the heartbeat silence after which a node is offline.
	NodeTTL time.Duration
	// BootstrapCode stands in for a loopback connection on the bootstrap
	// (BootstrapCodeHeader); the node prints it while no administrator
	// exists.
	BootstrapCode string
	// Console serves the web console for every GET or HEAD that no route
	// takes outside the API, internal, health and metrics paths (nil: none).
	Console http.Handler
}

// endpoints is the one strict-server implementation, assembled from the
// endpoint groups, each in its own file.
type endpoints struct {
	*systemEndpoints
	*securityEndpoints
	*accountEndpoints
	*rtspAuthEndpoints
	*sessionEndpoints
	*channelEndpoints
	*eventEndpoints
	*webhookEndpoints
	*lifecycleEndpoints
	*nodeCommandEndpoints
	*nodesEndpoints
	*engineEndpoints
	*rtpEndpoints
	*transcoderEndpoints
	*tuningEndpoints
	*playbackEndpoints
	*streamEndpoints
	*snapshotEndpoints
	*gb28181Endpoints
	*talkEndpoints
	*recordingEndpoints
	*rtcEndpoints
}

// NewEngine assembles the router: contract routes behind the guard,
// internal routes behind their HMAC check, and /metrics behind system.view.
func NewEngine(d Deps) (*gin.Engine, error) {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	if err := e.SetTrustedProxies(d.TrustedProxies); err != nil {
		return nil, fmt.Errorf("trusted proxies: %w", err)
	}
	// Only the configured headers name a trusted proxy's client (gin would
	// also believe X-Real-IP).
	e.RemoteIPHeaders = d.ClientIPHeaders
	if len(e.RemoteIPHeaders) == 0 {
		e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	}
	metrics := NewMetrics(d.Registry)
	e.Use(withTrace(), staleMark(d.Node.InContact), accessLog(d.Log, metrics), recovery(d.Log))
	e.NoRoute(func(c *gin.Context) {
		if d.Console != nil && consoleRequest(c.Request) {
			d.Console.ServeHTTP(c.Writer, c.Request)
			return
		}
		abortWithError(c, newError(http.StatusNotFound, "not_found", "no such endpoint"))
	})
	e.NoMethod(func(c *gin.Context) {
		abortWithError(c, newError(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint does not accept "+c.Request.Method))
	})

	docs, err := renderDocs(d.Ops)
	if err != nil {
		return nil, err
	}
	var relay *gbRelay
	if d.GB28181 != nil && len(d.LinkKeys) > 0 {
		relay = newGBRelay(d.Node, d.LinkKeys)
		d.GB28181.SetRelay(relay)
	}
	talkEP := &talkEndpoints{talk: d.Talk, gb: d.GB28181, store: d.Node, relay: relay}
	handlers := endpoints{
		systemEndpoints: &systemEndpoints{svc: d.System, tasks: d.Tasks, contract: d.ContractAudit, cluster: d.Cluster, store: d.StoreAudit, retention: d.Retention,
			nodes: d.Nodes, yaml: d.ContractYAML, docs: docs,
			emails: ratelimit.New(testEmailsPerMinute, testEmailsPerMinute), emailsAll: ratelimit.New(testEmailsPerNodeMinute, testEmailsPerNodeMinute)},
		securityEndpoints: &securityEndpoints{tokens: d.Tokens, audit: d.Node.State()},
		accountEndpoints:  &accountEndpoints{accounts: d.Accounts, csrf: d.Sessions.CSRFToken},
		rtspAuthEndpoints: &rtspAuthEndpoints{creds: d.RTSPAuth},
		sessionEndpoints: &sessionEndpoints{sessions: d.Sessions, accounts: d.Accounts, proxies: d.Proxies,
			byAddress: ratelimit.New(float64(d.LoginRatePerMinute), d.LoginRatePerMinute),
			byUser:    ratelimit.New(float64(d.LoginRatePerMinute), d.LoginRatePerMinute),
			captchas:  ratelimit.New(float64(3*d.LoginRatePerMinute), 3*d.LoginRatePerMinute)},
		channelEndpoints: &channelEndpoints{channels: d.Channels, gb: d.GB28181, store: d.Node},
		eventEndpoints:   &eventEndpoints{events: d.Events, auth: d.Auth, sockets: d.Sockets, log: d.Log},
		talkEndpoints:    talkEP,
		gb28181Endpoints: &gb28181Endpoints{store: d.Node, reader: d.Node.State(), gb: d.GB28181, playback: d.GBPlayback, leases: d.Playback, channels: d.Channels,
			nodes: d.Nodes},
		webhookEndpoints: &webhookEndpoints{plans: d.Webhooks, dispatcher: d.Dispatcher},
		lifecycleEndpoints: &lifecycleEndpoints{nodes: d.Nodes, presence: d.Presence, servers: d.MediaServers, authority: d.Authority,
			agentURL: d.AgentURL},
		nodeCommandEndpoints: &nodeCommandEndpoints{commands: d.Commands, nodes: d.Nodes},
		nodesEndpoints: &nodesEndpoints{nodes: d.Nodes, presence: d.Presence, servers: d.MediaServers, monitor: d.Monitor, node: d.Node,
			system: d.System, ttl: d.NodeTTL},
		engineEndpoints:     &engineEndpoints{nodes: d.Nodes, presence: d.Presence, engines: d.Engines},
		rtpEndpoints:        &rtpEndpoints{ports: d.RTPPorts},
		transcoderEndpoints: &transcoderEndpoints{templates: d.Templates},
		tuningEndpoints:     &tuningEndpoints{tuning: d.Tuning},
		playbackEndpoints:   &playbackEndpoints{playback: d.Playback},
		streamEndpoints:     &streamEndpoints{channels: d.Channels, streams: d.Streams, engines: d.Engines, nodes: d.Nodes},
		snapshotEndpoints:   &snapshotEndpoints{snaps: d.Snapshots},
		recordingEndpoints:  &recordingEndpoints{recording: d.Recording, auto: d.AutoRecord},
		rtcEndpoints:        &rtcEndpoints{rooms: d.Rooms},
	}
	// The third-party listing of media servers is the administrative one.
	handlers.mediaServers = func(ctx context.Context, clusterID *string) (contract.MediaServerList, error) {
		r, err := handlers.ListMediaServers(ctx, contract.ListMediaServersRequestObject{Params: contract.ListMediaServersParams{ClusterId: clusterID}})
		if err != nil {
			return contract.MediaServerList{}, err
		}
		return contract.MediaServerList(r.(contract.ListMediaServers200JSONResponse)), nil
	}
	strict := contract.NewStrictHandlerWithOptions(handlers, nil, contract.StrictGinServerOptions{
		RequestErrorHandlerFunc: func(c *gin.Context, err error) {
			abortWithError(c, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: err.Error(), Retryable: retryable(false)})
		},
		HandlerErrorFunc:         func(c *gin.Context, err error) { abortWithError(c, err) },
		ResponseErrorHandlerFunc: func(c *gin.Context, err error) { abortWithError(c, err) },
	})
	api := e.Group("", guard(guardConfig{ops: d.Ops, auth: d.Auth, maxBody: d.MaxBodyBytes, barrier: d.Node.LinearizableBarrier, denials: d.Denials,
		local: NewLocalAccess(d.Proxies, d.BootstrapCode)}))
	contract.RegisterHandlersWithOptions(api, strict, contract.GinServerOptions{
		ErrorHandler: func(c *gin.Context, err error, status int) {
			abortWithError(c, &Error{Status: status, Code: "invalid_query", Message: err.Error(), Retryable: retryable(false)})
		},
	})

	internal := e.Group("", internalAuth(d.LinkKeys, 1<<20))
	internal.POST(JoinPath, joinHandler(d.Node))
	internal.POST(RemovePath, removeHandler(d.Node))
	internal.POST(HeartbeatPath, heartbeatHandler(d.Presence))
	internal.POST(GB28181ControlPath, gbRelayHandler(d.GB28181, relayedControl))
	internal.POST(GB28181PresetQueryPath, gbRelayHandler(d.GB28181, relayedPresetQuery))
	internal.POST(GB28181RecordQueryPath, gbRelayHandler(d.GB28181, relayedRecordQuery))
	internal.POST(GB28181InvitePath, gbRelayHandler(d.GB28181, relayedInvite))
	internal.POST(GB28181ByePath, gbRelayHandler(d.GB28181, relayedBYE))
	internal.POST(GB28181MediaEndedPath, gbRelayHandler(d.GB28181, relayedMediaEnded))
	internal.POST(TalkPath, talkRelayHandler(talkEP))

	e.GET("/metrics", func(c *gin.Context) {
		id, err := d.Auth.Authenticate(c.Request, net.ParseIP(c.ClientIP()))
		switch {
		case err != nil:
			abortWithError(c, err)
		case id == nil:
			abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "metrics need a credential with system.view"))
		case !id.Has("system.view"):
			abortWithError(c, newError(http.StatusForbidden, "permission_denied", `metrics need permission "system.view"`))
		default:
			promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}).ServeHTTP(c.Writer, c.Request)
		}
	})
	return e, nil
}

// Routes lists the registered routes for the contract audit.
func Routes(e *gin.Engine) []contractaudit.Route {
	var out []contractaudit.Route
	for _, r := range e.Routes() {
		out = append(out, contractaudit.Route{Method: r.Method, Path: r.Path})
	}
	return out
}

// consoleRequest tells a browser's page or asset request from a call to an
// unknown API path, which keeps its JSON 404.
func consoleRequest(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	for _, prefix := range []string{"/api/", "/internal/"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return p != "/api" && p != "/internal" && p != "/health" && p != "/metrics"
}
