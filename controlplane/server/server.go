// Package server assembles a control node: it loads the keyring, opens the
// replicated store, joins or founds the cluster, starts the HTTP API and the
// background tasks, and shuts all of it down in order.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/api"
	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/agentport"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/clusterlink"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/connguard"
	"github.com/svcplatform/svc/controlplane/contractaudit"
	"github.com/svcplatform/svc/controlplane/enginehooks"
	"github.com/svcplatform/svc/controlplane/engines"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/controlplane/rtpports"
	"github.com/svcplatform/svc/controlplane/rtspauth"
	"github.com/svcplatform/svc/controlplane/session"
	"github.com/svcplatform/svc/controlplane/snapshots"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/storeaudit"
	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/controlplane/talk"
	"github.com/svcplatform/svc/controlplane/tasks"
	"github.com/svcplatform/svc/controlplane/tuning"
	"github.com/svcplatform/svc/controlplane/webhooks"
)

// IndexSpecs are the typed index tables of every kind the control plane
// stores. Append only; a changed declaration rebuilds its table at start.
var IndexSpecs = append([]query.Index{apitoken.Index, audit.Index, account.Index, nodecommand.Index, events.OutboxIndex,
	webhooks.DeliveryIndex, streams.SessionIndex, playback.LeaseIndex, rooms.Index, rooms.RecordingIndex, rooms.CompositeIndex,
	gb28181.DeviceIndex}, append(channels.Indexes, recording.Indexes...)...)

// AuthContactWindow is how long a follower keeps deciding on credentials
// after it last heard from the leader.
const AuthContactWindow = 10 * time.Second

// OwnedPrefixes are the key prefixes this version writes; the migration
// audit reports anything else as a residue.
var OwnedPrefixes = append(append([]string{"/cluster/", "/security/", "/system/", "/nodes/", "/events/", "/webhooks/", streams.SessionsPrefix, "/playback/",
	"/snapshots/"}, channels.OwnedPrefixes...), append(recording.OwnedPrefixes, rooms.OwnedPrefixes...)...)

// Server is a running control node.
type Server struct {
	Config   config.Config
	Log      *zap.Logger
	Keys     *keyring.Keyring
	Node     *raftnode.Node
	System   *system.Service
	Cluster  *cluster.Service
	Accounts *account.Service
	Sessions *session.Service
	// Channels is the channel catalogue; the stream dispatcher and the
	// engine hooks report through it.
	Channels *channels.Service
	// Events writes engine hooks as events (the agent's hook receiver calls
	// Events.ReceiveEngineHook) and reads the outbox.
	Events     *events.Service
	Webhooks   *webhooks.Service
	Dispatcher *webhooks.Dispatcher
	// The live path: stream sessions, playback grants, the engine hooks.
	Streams          *streams.Service
	Playback         *playback.Service
	RTSPAuth         *rtspauth.Service
	Snapshots        *snapshots.Service
	Hooks            *enginehooks.Service
	streamDispatcher *streams.Dispatcher
	streamReconciler *streams.Reconciler
	// GB28181 is the SIP registrar, nil unless configured.
	GB28181 *gb28181.Service
	// gbPlayback runs the GB28181 history playback sessions, nil without
	// a SIP server.
	gbPlayback *streams.GBPlayback
	// talk holds this node's intercom sessions.
	talk *talk.Service
	// Recording indexes files and drives the engines' recorders.
	Recording     *recording.Service
	Rooms         *rooms.Service
	autoRecording *recording.Reconciler
	cutMerge      *recording.CutMergeWorker
	HTTPAddr      string // the bound address
	sockets       *httpapi.RuntimeSockets
	legacyWebhook webhooks.LegacyEndpoint
	http          *http.Server
	ln            net.Listener
	cancel        context.CancelFunc
	// bg is the context of the background work, canceled by Shutdown.
	bg   context.Context
	done chan struct{}
	// wg counts the loops and the work hooks start (goBackground), which
	// Shutdown waits for.
	wg      sync.WaitGroup
	denials *httpapi.DenialAuditor
	agents  *agentSide
	// tasks and tokenUsage are run by loops (loops.go).
	tasks      *tasks.Registry
	tokenUsage *apitoken.Usage
	// bootstrapCode stands in for a loopback connection on the bootstrap
	// until an administrator exists (printed in the log, see
	// announceBootstrap).
	bootstrapCode string
}

// AgentAddr is the agent port's bound address.
func (s *Server) AgentAddr() string { return s.agents.agentAddr() }

// AgentPort is the running agent port (the lead wires the engine hook
// inbox into it with SetHooks).
func (s *Server) AgentPort() *agentport.Server { return s.agents.port }

// MediaNodes is the registry of media hosts (node agents and their engines).
func (s *Server) MediaNodes() *nodes.Service { return s.agents.nodes }

// Start brings a control node up and returns once its API is serving.
func Start(ctx context.Context, cfg config.Config, log *zap.Logger) (*Server, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	founding := cfg.Join == ""
	// A key is created only for a brand-new founding node; a node with
	// state must find the key its cluster already uses.
	_, statErr := os.Stat(filepath.Join(cfg.DataDir, "state.db"))
	keys, err := keyring.LoadOrCreate(cfg.KeyFile(), founding && errors.Is(statErr, os.ErrNotExist))
	if err != nil {
		if !founding {
			err = fmt.Errorf("%w (a joining node needs the cluster key file of the existing cluster, given with --cluster-key-file)", err)
		}
		return nil, err
	}
	node, err := raftnode.Open(raftnode.Config{
		NodeID: cfg.NodeID, DataDir: cfg.DataDir, RaftBind: cfg.RaftAddr, LinkKeys: keys.LinkKeys(),
		Bootstrap: founding, IndexSpecs: IndexSpecs, Logger: log,
		WALSegmentSize: cfg.RaftSegmentMiB << 20, StorageReserve: uint64(cfg.StorageReserveMiB) << 20,
	})
	if err != nil {
		return nil, unreadableHint(cfg, err)
	}
	cfg.RaftAddr = config.Bound(cfg.RaftAddr, node.RaftAddress())
	s := &Server{Config: cfg, Log: log, Keys: keys, Node: node, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			node.Shutdown()
		}
	}()
	proxies, err := httpapi.NewProxyTrust(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	s.ln = connguard.Limit(ln, cfg.MaxConnectionsPerClient, proxies.Contains)
	defer func() {
		if !ok {
			s.ln.Close()
		}
	}()
	s.HTTPAddr = s.ln.Addr().String()
	cfg.HTTPAddr = config.Bound(cfg.HTTPAddr, s.HTTPAddr)
	if s.agents, err = newAgentSide(cfg, node, keys, log); err != nil {
		return nil, fmt.Errorf("agent port: %w", err)
	}
	// From here on the configuration names the bound ports, which others
	// are told (member records, the agent port URL, join requests).
	cfg.AgentAddr = s.agents.cfg.AgentAddr
	s.Config = cfg
	defer func() {
		if !ok {
			s.agents.shutdown(context.Background())
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(reg, node)
	ops, err := httpapi.LoadOperations()
	if err != nil {
		return nil, err
	}
	smtpPassword := ""
	if cfg.SMTPPasswordFile != "" {
		b, err := os.ReadFile(cfg.SMTPPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("smtp password file: %w", err)
		}
		smtpPassword = strings.TrimSpace(string(b))
	}
	registry := tasks.New(log.Named("tasks"), node.Leadership().IsLeader)
	var routes func() []contractaudit.Route
	cleaner := retention.New(node, cfg.HistoryRetention)
	s.Cluster = cluster.New(cluster.Deps{Node: node, NodeID: cfg.NodeID, Engines: s.runningEngines})
	s.System = system.New(system.Deps{
		Node: node, NodeID: cfg.NodeID, APIURL: cfg.APIURL(), StartedAt: time.Now(),
		Tasks: registry, Ports: ports(cfg, s.HTTPAddr, node.RaftAddress(), s.agents.agentAddr()),
		SMTP:      system.SMTP{Host: cfg.SMTPHost, Port: cfg.SMTPPort, From: cfg.SMTPFrom, Username: cfg.SMTPUsername, Password: smtpPassword, StartTLS: cfg.SMTPStartTLS},
		Retention: cleaner, Cluster: s.Cluster,
	})
	s.System.RegisterBuiltinTasks()
	registerAuditRetention(registry, node, audit.Retention{MaxAge: cfg.AuditRetention, MaxEntries: cfg.AuditMaxEntries})
	bg, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	defer func() {
		if !ok {
			cancel()
		}
	}()
	s.denials = httpapi.NewDenialAuditor(bg, node, log.Named("audit"), cfg.AuditDenialWindow)
	if s.bootstrapCode, err = newBootstrapCode(); err != nil {
		return nil, err
	}
	accounts := &account.Service{Store: node, Reader: node.State(), Propagated: node.WaitMembersApplied}
	s.Accounts = accounts
	owner := func(ctx context.Context, userID string) ([]string, bool, bool, error) {
		perms, active, err := accounts.Effective(ctx, userID)
		if errors.Is(err, account.ErrNotFound) {
			return nil, false, false, nil
		}
		return perms, active, err == nil, err
	}
	inContact := func() bool { return node.InContact(AuthContactWindow) }
	usage := &apitoken.Usage{Store: node}
	fresh := func() bool { return node.InContact(httpapi.StaleAfter) }
	sessions := &session.Service{Store: node, Accounts: accounts, MACKeys: keys.SubKeys("console-session"), Propagated: node.WaitMembersApplied,
		Catchup: node.LinearizableBarrier, Config: session.Config{AccessTTL: cfg.SessionAccessTTL, SessionTTL: cfg.SessionTTL}}
	s.Sessions = sessions
	s.Channels = &channels.Service{Store: node, Reader: node.State(), Keys: keys}
	if err := s.startGB28181(bg, cfg, log); err != nil {
		return nil, err
	}
	defer func() {
		if !ok && s.GB28181 != nil {
			s.GB28181.Close()
		}
	}()
	if err := s.startEvents(bg, cfg, keys, registry); err != nil {
		return nil, err
	}
	tokens := &apitoken.Service{Store: node, Reader: node.State(), Keys: keys, Propagated: node.WaitMembersApplied}
	rtspCreds := &rtspauth.Service{Store: node, Keys: keys}
	s.startLive(cfg, keys, tokens, owner, rtspCreds)
	web, err := newWebConsole(s.agents.nodes)
	if err != nil {
		return nil, err
	}
	engine, err := httpapi.NewEngine(httpapi.Deps{
		Ops: ops, Auth: httpapi.Credentials{
			Tokens: httpapi.APITokenAuth{Reader: node.State(), Owner: owner, Cache: &httpapi.AuthCache{}, InContact: inContact, Fresh: fresh,
				Revision: areaRevision(node.State(), tokenAreas...), Usage: usage},
			Sessions: &httpapi.SessionAuth{Sessions: sessions, Permissions: accounts.Permissions, Proxies: proxies, InContact: inContact, Fresh: fresh,
				Revision: areaRevision(node.State(), session.SessionsPrefix, account.UsersPrefix, account.RolesPrefix)},
			Snapshots: s.Snapshots.CheckTicket,
		}, Log: log.Named("http"), Registry: reg,
		Sessions: sessions, Proxies: proxies, LoginRatePerMinute: cfg.LoginRatePerMinute,
		Accounts:     accounts,
		RTSPAuth:     rtspCreds,
		MaxBodyBytes: cfg.MaxBodyBytes, TrustedProxies: cfg.TrustedProxies, ClientIPHeaders: cfg.ClientIPHeaders, System: s.System, Node: node,
		Cluster: s.Cluster, StoreAudit: storeaudit.New(node, OwnedPrefixes), Retention: cleaner, Tasks: registry,
		ContractAudit: contractaudit.New(ops.Spec, func() []contractaudit.Route { return routes() }),
		LinkKeys:      keys.LinkKeys(), ContractYAML: api.OpenAPIYAML,
		Denials:  s.denials,
		Tokens:   tokens,
		Channels: s.Channels, Playback: s.Playback, Streams: s.Streams, Snapshots: s.Snapshots, GB28181: s.GB28181, GBPlayback: s.gbPlayback,
		Talk: s.talk, Recording: s.Recording, AutoRecord: s.autoRecording, Rooms: s.Rooms,
		Events: s.Events, Webhooks: s.Webhooks, Dispatcher: s.Dispatcher.Running, Sockets: s.sockets,
		Nodes: s.agents.nodes, Presence: s.agents.presence, Commands: s.agents.commands, MediaServers: s.agents.servers,
		Tuning: &tuning.Service{NodeID: cfg.NodeID, Servers: s.agents.servers}, RTPPorts: &rtpports.Service{Servers: s.agents.servers},
		Engines:   &engines.Service{Servers: s.agents.servers},
		Templates: s.agents.templates, Monitor: s.agents.monitor, Authority: s.agents.authority, AgentURL: cfg.AgentURL(),
		NodeTTL: cfg.NodeHeartbeatTTL, BootstrapCode: s.bootstrapCode, Console: web,
	})
	if err != nil {
		return nil, err
	}
	routes = func() []contractaudit.Route { return httpapi.Routes(engine) }
	s.http = &http.Server{Handler: connguard.BodyDeadline(engine, cfg.RequestBodyTimeout), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}

	go func() {
		defer close(s.done)
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", zap.Error(err))
		}
	}()
	// A restarting node is already a member (or was removed on purpose);
	// only a new node asks to join.
	if !founding && !node.HadState() {
		if err := joinCluster(ctx, keys, cfg.Join, raftnode.JoinRequest{NodeID: cfg.NodeID, RaftAddress: node.RaftAddress(), HTTPAddress: cfg.APIURL()}, log); err != nil {
			cancel()
			s.http.Close()
			<-s.done
			return nil, err
		}
	}
	s.agents.start()
	s.AgentPort().SetHooks(s.Hooks)
	s.tasks, s.tokenUsage = registry, usage
	s.bg = bg
	s.runLoops(bg)
	ok = true
	log.Info("control node started", zap.String("api", cfg.APIURL()), zap.String("raft", node.RaftAddress()), zap.Bool("founding", founding))
	return s, nil
}

// Shutdown stops accepting requests, lets running ones finish within the
// grace period, stops the background work, hands leadership over and closes
// the store.
func (s *Server) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.Config.ShutdownGrace)
	defer cancel()
	agentErr := s.agents.shutdown(ctx)
	err := errors.Join(s.http.Shutdown(ctx), agentErr)
	<-s.done
	s.cancel()
	if s.talk != nil {
		s.talk.Close()
	}
	if s.GB28181 != nil {
		s.GB28181.Close()
	}
	s.wg.Wait()
	s.sockets.Wait()
	s.denials.Wait() // flushes queued audit records while the store is up
	return errors.Join(err, s.Node.Shutdown())
}

func ports(cfg config.Config, httpAddr, raftAddr, agentAddr string) []system.Port {
	return []system.Port{
		{Module: "api", Protocol: "tcp", Address: httpAddr, Enabled: true},
		{Module: "raft", Protocol: "tcp", Address: raftAddr, Enabled: true},
		{Module: "agent", Protocol: "tcp", Address: agentAddr, Enabled: true},
		{Module: "engine-http", Protocol: "tcp", Address: "0.0.0.0:8088"},
		{Module: "rtsp", Protocol: "tcp", Address: "0.0.0.0:8554"},
		{Module: "sip", Protocol: "udp", Address: "0.0.0.0:5060"},
		{Module: "sip", Protocol: "tcp", Address: "0.0.0.0:5060"},
		{Module: "rtp", Protocol: "udp", Address: "0.0.0.0:30000", PortEnd: 30999},
		{Module: "webrtc", Protocol: "udp", Address: "0.0.0.0:8189"},
	}
}

// ensureIdentity writes the cluster identity once; a compare makes sure two
// leaders can never write different ids.
func ensureIdentity(ctx context.Context, node *raftnode.Node, log *zap.Logger) {
	retryEverySecond(ctx, log, "writing cluster identity", func(ctx context.Context) error {
		id, _ := uuid.NewV7()
		val, _ := json.Marshal(cluster.Identity{ClusterID: id.String(), CreatedAt: time.Now().UTC()})
		_, err := node.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(cluster.IdentityKey)}, Then: []store.Op{store.Put(cluster.IdentityKey, val)}})
		return err
	})
}

// registerSelf records this node's addresses for the other members.
func registerSelf(ctx context.Context, node *raftnode.Node, rec raftnode.MemberRecord, log *zap.Logger) {
	retryEverySecond(ctx, log, "registering member record", func(ctx context.Context) error {
		return node.RegisterMember(ctx, rec)
	})
}

// retryEverySecond runs op (each try bounded to 10 s) until it succeeds or
// ctx ends.
func retryEverySecond(ctx context.Context, log *zap.Logger, what string, op func(context.Context) error) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := op(cctx)
		cancel()
		if err == nil {
			return
		}
		log.Debug(what+" failed; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// joinCluster asks a member (by its API URL) to add this node, retrying
// while the cluster elects a leader, for up to a minute.
func joinCluster(ctx context.Context, keys *keyring.Keyring, base string, req raftnode.JoinRequest, log *zap.Logger) error {
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		status, err := callInternal(ctx, keys, base, httpapi.JoinPath, req)
		if err == nil {
			log.Info("joined cluster", zap.String("via", base))
			return nil
		}
		if status == http.StatusUnauthorized || status == http.StatusBadRequest {
			return err // wrong cluster key or bad id: retrying cannot help
		}
		last = err
		log.Warn("join attempt failed; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("could not join the cluster within a minute: %w", last)
}

// internalClient bounds each internal call, so a member that accepts the
// connection but never answers cannot stall start-up.
var internalClient = &http.Client{Timeout: 10 * time.Second}

// callInternal posts a signed request to an internal entry point of the
// member at base and returns the HTTP status.
func callInternal(ctx context.Context, keys *keyring.Keyring, base, path string, v any) (int, error) {
	body, _ := json.Marshal(v)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hr.Header = clusterlink.Sign(keys.LinkKeys()[0], http.MethodPost, hr.URL.Host, path, body, time.Now())
	hr.Header.Set("Content-Type", "application/json")
	resp, err := internalClient.Do(hr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s%s answered %s: %s", base, path, strconv.Itoa(resp.StatusCode), bytes.TrimSpace(msg))
	}
	return resp.StatusCode, nil
}

// registerStoreMetrics exposes the replica's position and role.
func registerStoreMetrics(reg prometheus.Registerer, node *raftnode.Node) {
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("svc_store_revision", "Latest applied store revision on this node.", func() float64 { return float64(node.Revision()) })
	gauge("svc_store_applied_index", "Raft index of the last entry applied to the state.", func() float64 { return float64(node.State().AppliedIndex()) })
	gauge("svc_store_commit_index", "Raft commit index known to this node.", func() float64 { return float64(node.Raft().CommitIndex()) })
	gauge("svc_store_compact_revision", "Revision up to which watch history was compacted.", func() float64 { return float64(node.State().CompactRevision()) })
	gauge("svc_store_watchers", "Open watches on this node.", func() float64 { return float64(node.State().Watchers()) })
	gauge("svc_raft_term", "Current raft term.", func() float64 { return float64(node.Raft().CurrentTerm()) })
	gauge("svc_raft_leader", "1 when this node is the ready leader.", func() float64 {
		if node.Leadership().IsLeader() {
			return 1
		}
		return 0
	})
	gauge("svc_store_snapshot_restores", "Snapshots installed since start.", func() float64 { return float64(node.SnapshotRestores()) })
	gauge("svc_store_disk_free_bytes", "Free space of the data directory's filesystem.", func() float64 { return float64(node.Storage().FreeBytes) })
	gauge("svc_store_writes_refused", "1 while this node refuses writes for lack of disk space (storage_full).", func() float64 {
		if node.Storage().Full {
			return 1
		}
		return 0
	})
	gauge("svc_store_apply_halted", "1 while a local failure (such as a full disk) halts applying committed entries.", func() float64 {
		if _, err := node.ApplyStalled(); err != nil {
			return 1
		}
		return 0
	})
}

// sweepSessions removes ended sessions, expired captchas and stale login
// failure counters every minute while this node leads.
func sweepSessions(ctx context.Context, sessions *session.Service, log *zap.Logger) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := sessions.Cleanup(ctx)
			if err != nil && ctx.Err() == nil {
				log.Warn("session cleanup failed", zap.Error(err))
			} else if n > 0 {
				log.Debug("session cleanup", zap.Int("removed", n))
			}
		}
	}
}

// StartupWritten reports whether the node's own start-up writes are in
// its store: the cluster identity, its member record, its agent port and
// (on the founding node) the cluster CA. Until then the store is still
// changing under a caller that compares revisions.
func (s *Server) StartupWritten(ctx context.Context) bool {
	id := s.Config.NodeID
	member, _, _ := store.Get(ctx, s.Node, raftnode.MembersPrefix+id, store.Local)
	port, _, _ := store.Get(ctx, s.Node, agentPortsPrefix+id, store.Local)
	ca, _, _ := store.Get(ctx, s.Node, clusterca.Key, store.Local)
	return s.System.ClusterID(ctx) != "" && member != nil && port != nil && (ca != nil || s.Config.Join != "")
}

// Kill stops the node as a crash would, for fault tests that run nodes in
// one process: the store stops without a clean shutdown and the API closes
// its connections without draining them.
func (s *Server) Kill() {
	_ = s.Node.Kill()
	_ = s.http.Close()
}
