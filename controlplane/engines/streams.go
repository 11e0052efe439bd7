package engines

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// playerWait bounds how long the player listing waits for each host.
const playerWait = 4 * time.Second

// HostPlayers are the players one host's engine serves.
type HostPlayers struct {
	Host
	Players []engineapi.PlayerInfo
}

// Unreachable is a host whose players could not be listed, and why.
type Unreachable struct {
	Host
	Err error
}

// Players lists the players of the given hosts' engines that match filter,
// asking the hosts at once; a host that does not answer within playerWait
// is reported, not fatal.
func (s *Service) Players(ctx context.Context, hosts []*nodes.Record, filter agentapi.PlayerFilter) ([]HostPlayers, []Unreachable) {
	var (
		mu          sync.Mutex
		wg          sync.WaitGroup
		found       []HostPlayers
		unreachable []Unreachable
	)
	actor := audit.Actor{Type: "system", ID: "player-listing"}
	for _, rec := range hosts {
		wg.Add(1)
		go func(rec *nodes.Record) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, playerWait)
			defer cancel()
			var list engineapi.PlayerList
			_, err := s.Servers.Do(cctx, mediaserver.Call{Target: mediaserver.Target{NodeID: rec.NodeID}, Type: agentapi.TypeEnginePlayerList,
				Payload: filter, Read: true, Actor: actor}, &list)
			h := Host{NodeID: rec.NodeID, MediaServerID: rec.MediaServerID}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreachable = append(unreachable, Unreachable{Host: h, Err: err})
				return
			}
			found = append(found, HostPlayers{Host: h, Players: list.Players})
		}(rec)
	}
	wg.Wait()
	return found, unreachable
}

// ErrChannelStream refuses an ad-hoc proxy on a path a channel owns.
var ErrChannelStream = fault.New(fault.Conflict, "channel_stream_conflict", "the stream belongs to a channel; start or stop the channel instead")

// proxyWait bounds how long a proxy start or stop waits for the agent.
const proxyWait = 10 * time.Second

// ProxyID names an ad-hoc proxy by its path, so a start is idempotent and
// a stop needs only the path.
func ProxyID(vhost, app, stream string) string {
	if vhost == "" {
		vhost = channels.DefaultVhost
	}
	return "proxy:" + vhost + "/" + app + "/" + stream
}

// ProxyCommand is where a proxy start or stop ended. Failure is the
// agent's error when the command ran and failed; an error returned beside
// it means no command was queued.
type ProxyCommand struct {
	ID      string
	Outcome mediaserver.Outcome
	Failure error
}

// Proxies decides whether a path belongs to a channel.
type Proxies interface {
	ByStream(ctx context.Context, vhost, app, stream string) (*channels.Channel, error)
}

// StartProxy has a host's engine pull url into vhost/app/stream, retrying
// with backoff; starting a running proxy converges.
func (s *Service) StartProxy(
	ctx context.Context,
	actor audit.Actor,
	owners Proxies,
	mediaServerID, vhost, app, stream, url, transport string,
) (ProxyCommand, error) {
	req := engineapi.AddProxyRequest{ID: ProxyID(vhost, app, stream), URL: url, Vhost: vhost, App: app, Stream: stream, Transport: transport,
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(time.Second), MaxBackoff: engineapi.Duration(30 * time.Second)}}
	return s.proxyCall(ctx, actor, owners, mediaServerID, vhost, app, stream, agentapi.TypeEngineProxyAdd, req)
}

// StopProxy stops the ad-hoc proxy of a path; stopping a stopped one
// converges.
func (s *Service) StopProxy(ctx context.Context, actor audit.Actor, owners Proxies, mediaServerID, vhost, app, stream string) (ProxyCommand, error) {
	return s.proxyCall(ctx, actor, owners, mediaServerID, vhost, app, stream, agentapi.TypeEngineProxyRemove,
		agentapi.ProxyRef{ID: ProxyID(vhost, app, stream)})
}

func (s *Service) proxyCall(
	ctx context.Context,
	actor audit.Actor,
	owners Proxies,
	mediaServerID, vhost, app, stream, typ string,
	payload any,
) (ProxyCommand, error) {
	if _, err := owners.ByStream(ctx, vhost, app, stream); err == nil {
		return ProxyCommand{}, fmt.Errorf("%w: %s/%s", ErrChannelStream, app, stream)
	} else if !errors.Is(err, channels.ErrNotFound) {
		return ProxyCommand{}, err
	}
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: typ, Payload: payload,
		Reason: typ + " " + app + "/" + stream, Actor: actor, Wait: proxyWait}, nil)
	out := ProxyCommand{ID: ProxyID(vhost, app, stream), Outcome: o}
	var ce *mediaserver.CommandError
	if errors.As(err, &ce) && (ce.Code == engineapi.CodeProxyNotFound || ce.Code == engineapi.CodeProxyExists) {
		return out, nil
	}
	if err != nil && o.Command == nil {
		return out, err
	}
	out.Failure = err
	return out, nil
}

// ErrSmokeTestTimeout: the host did not finish a smoke test in time.
var ErrSmokeTestTimeout = fault.NewRetryable(fault.Unavailable, "agent_timeout", "the media server did not finish the test in time")

// smokeParallel bounds the tests of a batch running at once.
const smokeParallel = 4

// SmokeTest is one RTSP smoke test's answer.
type SmokeTest struct {
	Host
	engineapi.SmokeTestResult
}

// SmokeTestRTSP has a host's engine open an RTSP URL and read until the
// first frame or the request's timeout.
func (s *Service) SmokeTestRTSP(ctx context.Context, actor audit.Actor, mediaServerID string, req engineapi.SmokeTestRequest) (SmokeTest, error) {
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	var res engineapi.SmokeTestResult
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: agentapi.TypeEngineSmokeTestRTSP,
		Payload: req, Reason: "RTSP smoke test", Actor: actor, Wait: timeout + 10*time.Second}, &res)
	out := SmokeTest{Host: hostOf(o)}
	if err != nil {
		return out, err
	}
	if !o.Done {
		return out, fmt.Errorf("%w; see node command %s", ErrSmokeTestTimeout, o.Command.CommandID)
	}
	out.SmokeTestResult = res
	return out, nil
}

// SmokeTestBatch runs several smoke tests, a few at a time; errs[i] is set
// when test i could not run.
func (s *Service) SmokeTestBatch(ctx context.Context, actor audit.Actor, mediaServerIDs []string, reqs []engineapi.SmokeTestRequest) ([]SmokeTest, []error) {
	results, errs := make([]SmokeTest, len(reqs)), make([]error, len(reqs))
	sem := make(chan struct{}, smokeParallel)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = s.SmokeTestRTSP(ctx, actor, mediaServerIDs[i], reqs[i])
		}(i)
	}
	wg.Wait()
	return results, errs
}
