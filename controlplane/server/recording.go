package server

import (
	"net"
	"net/http"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/webhooks"
)

// startRecording assembles recording: the file index and sessions, and the
// leader's auto-record reconciler.
func (s *Server) startRecording(cfg config.Config) {
	// Cut/merge callbacks go out like webhooks: the same guard against
	// private targets, at save and at every connection.
	guard := &webhooks.TargetGuard{AllowPrivate: cfg.WebhookAllowPrivateTargets}
	s.Recording = &recording.Service{Store: s.Node, Reader: s.Node.State(), Channels: s.Channels, Engines: s.agents.servers, Nodes: s.agents.nodes, Playback: s.Playback,
		NodeID: cfg.NodeID, Callbacks: guard}
	s.Playback.Resources = s.Recording.Playable
	s.autoRecording = &recording.Reconciler{Recording: s.Recording, Log: s.Log.Named("recording")}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: guard.Control}
	s.cutMerge = &recording.CutMergeWorker{Recording: s.Recording, Log: s.Log.Named("cut-merge"),
		Client: &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}, Timeout: 15 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}
