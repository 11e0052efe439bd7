package mediaengine

import (
	"fmt"
	"net/http"
	"os"

	"github.com/svcplatform/svc/mediaengine/controlapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
)

// The engine as controlapi.Engine: what the loopback control API asks of
// the engine as a whole.
var _ controlapi.Engine = (*Engine)(nil)

// controlRoutes is the loopback control API over the engine's parts.
func (e *Engine) controlRoutes() http.Handler {
	return controlapi.Handler(e.secret, controlapi.Parts{Engine: e, Hub: e.hub, Players: e.players, Proxies: e.proxies, Records: e.records, Composites: e.composites,
		Log: e.log.Named("control")})
}

// Health is the engine's identity and load.
func (e *Engine) Health() engineapi.Health {
	cfg := e.cfg.Load()
	return engineapi.Health{Status: "ok", PID: os.Getpid(), Version: buildinfo.Version,
		MediaServerID: cfg.MediaServerID, StartedAt: e.startedAt, Streams: e.readyStreams(), Players: e.players.Len(), Proxies: e.proxies.Len()}
}

// readyStreams counts the streams on_stream_changed has reported: the
// control plane compares it with the sessions it holds Online.
func (e *Engine) readyStreams() int {
	n := 0
	for _, s := range e.hub.Streams() {
		if s.IsReady() {
			n++
		}
	}
	return n
}

// Config is the running configuration.
func (e *Engine) Config() engineapi.Config { return *e.cfg.Load() }

// PutConfig validates next, writes it to the configuration file and
// applies it.
func (e *Engine) PutConfig(next engineapi.Config) (engineapi.ConfigResult, error) {
	if err := next.Validate(); err != nil {
		return engineapi.ConfigResult{}, fmt.Errorf("%w: %w", controlapi.ErrInvalidConfig, err)
	}
	if err := e.writeConfig(next); err != nil {
		return engineapi.ConfigResult{}, err
	}
	res, err := e.apply(next)
	if err != nil {
		return engineapi.ConfigResult{}, fmt.Errorf("%w: %w", controlapi.ErrInvalidConfig, err)
	}
	return res, nil
}

// ForgetLease drops the hooks' cached admissions of an ended lease.
func (e *Engine) ForgetLease(leaseID string) { e.hooks.Load().ForgetLease(leaseID) }

// RTPServers describes the open GB28181 RTP servers.
func (e *Engine) RTPServers() []engineapi.RTPServerInfo { return e.rtpServers.list() }

// OpenRTPServer binds an RTP server's port and starts receiving.
func (e *Engine) OpenRTPServer(req engineapi.OpenRTPServerRequest) (engineapi.RTPServerInfo, error) {
	return e.rtpServers.open(req)
}

// CloseRTPServer ends one RTP server.
func (e *Engine) CloseRTPServer(id string) error { return e.rtpServers.close(id) }
