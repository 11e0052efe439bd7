package server

import (
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/recording"
)

// startRecording assembles recording: the file index and sessions, and the
// leader's auto-record reconciler.
func (s *Server) startRecording(cfg config.Config) {
	s.Recording = &recording.Service{Store: s.Node, Reader: s.Node.State(), Channels: s.Channels, Engines: s.agents.servers, Playback: s.Playback,
		NodeID: cfg.NodeID}
	s.Playback.Resources = s.Recording.Playable
	s.autoRecording = &recording.Reconciler{Recording: s.Recording, Log: s.Log.Named("recording")}
}
