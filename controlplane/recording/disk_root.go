package recording

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// RootProbe is what a media server's engine found at a candidate
// recording root (engineapi.RootProbe with the host named).
type RootProbe struct {
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	engineapi.RootProbe
}

// maxRootPath bounds a candidate root's path (PATH_MAX).
const maxRootPath = 4096

// ProbeRoot has a media server's engine check a candidate recording root
// directory on its host; with bind it also binds the directory's disk
// identity (writes the marker when there is none). The engine decides
// what is valid and says why not in Problem: a candidate that is not
// usable is an answer, not an error.
func (s *Service) ProbeRoot(ctx context.Context, actor audit.Actor, mediaServerID, path string, bind bool) (*RootProbe, error) {
	if mediaServerID == "" || path == "" {
		return nil, fmt.Errorf("%w: mediaServerId and path are required", ErrInvalid)
	}
	if len(path) > maxRootPath {
		return nil, fmt.Errorf("%w: path is longer than %d bytes", ErrInvalid, maxRootPath)
	}
	typ, reason := agentapi.TypeEngineRecordRootProbe, "probe a recording root"
	if bind {
		typ, reason = agentapi.TypeEngineRecordRootValidate, "validate a recording root"
	}
	var out RootProbe
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: typ,
		Payload: engineapi.RootProbeRequest{Path: path}, Reason: reason, Actor: actor, Read: !bind, Wait: s.engineWait()}, &out.RootProbe)
	if err != nil {
		return nil, err
	}
	if !o.Done {
		return nil, fmt.Errorf("%w: media server %s did not answer in time; see node command %s", ErrEngine, mediaServerID, o.Command.CommandID)
	}
	out.MediaServerID, out.NodeID = mediaServerID, o.Node.NodeID
	if out.CheckedAt.IsZero() {
		out.CheckedAt = time.Now().UTC()
	}
	return &out, nil
}
