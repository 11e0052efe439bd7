package server

import (
	"context"
	"net"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/agentport"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/connguard"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/monitoring"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/transcoder"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/hostmetrics"
	"github.com/svcplatform/svc/shared/pki"
)

// agentPortsPrefix records each control node's agent port URL, so agents
// learn every control node to fail over to.
const agentPortsPrefix = "/cluster/agent-ports/"

// agentSide is the node agent half of a control node: the cluster CA, the
// node registry, the command queue, presence and monitoring, and the agent
// port that serves them over mTLS.
type agentSide struct {
	cfg       config.Config
	log       *zap.Logger
	node      *raftnode.Node
	keys      *keyring.Keyring
	authority *clusterca.Authority
	nodes     *nodes.Service
	commands  *nodecommand.Service
	presence  *nodes.Presence
	servers   *mediaserver.Service
	templates *transcoder.Service
	monitor   *monitoring.Monitor
	ln        net.Listener
	port      *agentport.Server
	relay     *heartbeatRelay
	// stopPolls ends the agents' long polls at shutdown.
	pollCtx   context.Context
	stopPolls context.CancelFunc
}

func newAgentSide(cfg config.Config, node *raftnode.Node, keys *keyring.Keyring, log *zap.Logger) (*agentSide, error) {
	ln, err := net.Listen("tcp", cfg.AgentAddr)
	if err != nil {
		return nil, err
	}
	cfg.AgentAddr = config.Bound(cfg.AgentAddr, ln.Addr().String())
	a := &agentSide{cfg: cfg, log: log.Named("agents"), node: node, keys: keys, ln: connguard.Limit(ln, cfg.MaxConnectionsPerClient, nil)}
	a.authority = &clusterca.Authority{Store: node, Keys: keys}
	a.nodes = &nodes.Service{Store: node, LocalNodeID: cfg.NodeID, Propagated: node.WaitMembersApplied,
		RecordsRevision: areaRevision(node.State(), nodes.RecordPrefix)}
	a.commands = &nodecommand.Service{Store: node, Reader: node.State(), LocalNodeID: cfg.NodeID, Visibility: cfg.CommandVisibility, Keys: keys}
	a.presence = nodes.NewPresence(cfg.MonitoringRetention)
	a.templates = &transcoder.Service{Store: node}
	a.servers = &mediaserver.Service{Nodes: a.nodes, Commands: a.commands, Presence: a.presence, Templates: a.templates.Scoped}
	a.monitor = &monitoring.Monitor{NodeID: cfg.NodeID, Presence: a.presence, Sampler: hostmetrics.New(), Interval: heartbeatInterval(cfg),
		StartedAt: time.Now().UTC(), Broadcast: a.broadcast, Log: a.log}
	a.pollCtx, a.stopPolls = context.WithCancel(context.Background())
	a.relay = &heartbeatRelay{send: a.broadcast, latest: map[string]relayed{}, wake: make(chan struct{}, 1)}
	return a, nil
}

// heartbeatInterval spaces a control node's own heartbeats at a third of
// the node TTL, like agents do.
func heartbeatInterval(cfg config.Config) time.Duration {
	return max(cfg.NodeHeartbeatTTL/3, time.Second)
}

// agentAddr is the agent port's bound address.
func (a *agentSide) agentAddr() string { return a.ln.Addr().String() }

// start serves the agent port; the CA is loaded per handshake, so agents
// are served as soon as the first leader has made it.
func (a *agentSide) start() {
	certs := &clusterca.ServerCertificates{Authority: a.authority, Hosts: a.cfg.AgentHosts()}
	a.port = agentport.Start(agentport.Deps{Log: a.log, Authority: a.authority, Nodes: a.nodes, Commands: a.commands, Presence: a.presence,
		ServerURLs: a.serverURLs, Broadcast: a.relay.offer, BaseContext: a.pollCtx, BodyTimeout: a.cfg.RequestBodyTimeout}, a.ln, certs)
}

// purgeCodes deletes expired enrollment codes (a leader task).
func (a *agentSide) purgeCodes(ctx context.Context) {
	if n, err := a.nodes.PurgeExpiredCodes(ctx); err != nil {
		a.log.Warn("purging expired enrollment codes failed", zap.Error(err))
	} else if n > 0 {
		a.log.Info("purged expired enrollment codes", zap.Int("count", n))
	}
}

// heartbeatRelay passes the heartbeats agents send to this node on to the
// other control nodes, so each sees every media host's presence. One loop
// sends them: a burst or an unreachable peer delays the relay instead of
// piling up goroutines, and only an agent's latest heartbeat waits.
type heartbeatRelay struct {
	send   func(ctx context.Context, nodeID string, hb agentapi.Heartbeat, at time.Time) int
	mu     sync.Mutex
	latest map[string]relayed
	wake   chan struct{}
}

type relayed struct {
	hb agentapi.Heartbeat
	at time.Time
}

// offer queues an agent's heartbeat, replacing one of it not yet sent.
func (r *heartbeatRelay) offer(nodeID string, hb agentapi.Heartbeat, at time.Time) {
	r.mu.Lock()
	r.latest[nodeID] = relayed{hb, at}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run sends what was offered, the agents of one round in parallel, until
// ctx ends.
func (r *heartbeatRelay) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		round := r.latest
		r.latest = map[string]relayed{}
		r.mu.Unlock()
		var wg sync.WaitGroup
		for id, h := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.send(ctx, id, h.hb, h.at)
			}()
		}
		wg.Wait()
	}
}

// shutdown ends the long polls and stops the agent port.
func (a *agentSide) shutdown(ctx context.Context) error {
	a.stopPolls()
	if a.port == nil {
		return a.ln.Close()
	}
	return a.port.Shutdown(ctx)
}

// serverURLs are the agent port URLs of every control node, this one first.
func (a *agentSide) serverURLs(ctx context.Context) []string {
	out := []string{a.cfg.AgentURL()}
	resp, err := a.node.Range(ctx, agentPortsPrefix, store.RangeOptions{End: store.PrefixEnd(agentPortsPrefix)})
	if err != nil {
		return out
	}
	var others []string
	for _, kv := range resp.KVs {
		if u := string(kv.Value); u != out[0] {
			others = append(others, u)
		}
	}
	sort.Strings(others)
	return append(out, others...)
}

// broadcast passes a heartbeat to every other control node over the
// internal link and returns how many took it.
func (a *agentSide) broadcast(ctx context.Context, nodeID string, hb agentapi.Heartbeat, at time.Time) int {
	members, err := a.node.Members(ctx)
	if err != nil {
		return 0
	}
	body := httpapi.ForwardedHeartbeat{NodeID: nodeID, ReceivedAt: at, Heartbeat: hb}
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for _, m := range members {
		if m.Self || m.HTTPAddress == "" {
			continue
		}
		wg.Add(1)
		go func(url string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if _, err := callInternal(cctx, a.keys, url, httpapi.HeartbeatPath, body); err != nil {
				a.log.Debug("passing a heartbeat on failed", zap.String("to", url), zap.Error(err))
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}(m.HTTPAddress)
	}
	wg.Wait()
	return n
}

// LocalEnrollment issues an enrollment code for a media host on this
// machine (`svc dev`'s own agent): the agent port URL, the code and the CA
// pin, once the cluster CA exists.
func (s *Server) LocalEnrollment(ctx context.Context, nodeID string) (url, code, caHash string, err error) {
	ca, err := s.agents.authority.Wait(ctx)
	if err != nil {
		return "", "", "", err
	}
	en, err := s.agents.nodes.CreateEnrollment(ctx, audit.Actor{Type: "system", ID: "svc-dev"}, nodeID, 0)
	if err != nil {
		return "", "", "", err
	}
	return s.Config.AgentURL(), en.Code, pki.Hash(ca.Cert), nil
}

// runningEngines counts the enrolled media servers and those whose engine
// runs now, for the readiness check.
func (s *Server) runningEngines(ctx context.Context) (running, enrolled int, err error) {
	recs, err := s.agents.nodes.List(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range recs {
		if r.Status == nodes.StatusRetired || r.Status == nodes.StatusPending {
			continue
		}
		enrolled++
		if r.Status == nodes.StatusOnline && r.Engine.Process == agentapi.EngineRunning {
			running++
		}
	}
	return running, enrolled, nil
}
