package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// roomCompositeInterval is how often the leader's composite worker looks
// for composites to render when nothing wakes it.
const roomCompositeInterval = 5 * time.Second

// roomCompositeWait is how long one ask waits for a render; a longer
// render is asked for again on a later pass (which joins it).
const roomCompositeWait = 2 * time.Minute

var roomCompositeActor = audit.Actor{Type: "system", ID: "rtc-composite"}

// roomComposer renders meeting composites on the media server that holds
// the recording's files, through its agent, and reads them like
// cut/merge outputs (the engine keeps both by id).
type roomComposer struct{ s *Server }

func (c roomComposer) Compose(ctx context.Context, mediaServerID string, req rooms.ComposeRequest) (bool, int64, error) {
	in := engineapi.CompositeRequest{CompositeID: req.CompositeID, DurationMs: req.DurationMs}
	for _, l := range req.Lanes {
		lane := engineapi.CompositeLane{Files: []engineapi.CompositeFile{}}
		for _, f := range l {
			lane.Files = append(lane.Files, engineapi.CompositeFile{FileID: f.FileID, OffsetMs: f.OffsetMs, Video: f.Video, Audio: f.Audio})
		}
		in.Lanes = append(in.Lanes, lane)
	}
	var res engineapi.CompositeResult
	o, err := c.s.agents.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: agentapi.TypeEngineRecordComposite,
		Payload: in, Reason: "meeting composite " + req.CompositeID, Actor: roomCompositeActor, Wait: roomCompositeWait}, &res)
	var ce *mediaserver.CommandError
	switch {
	case errors.As(err, &ce):
		return false, 0, fmt.Errorf("%w: %w", rooms.ErrComposeRefused, err)
	case err != nil:
		return false, 0, err
	}
	return o.Done, res.FileSize, nil
}

func (c roomComposer) CompositeURL(ctx context.Context, mediaServerID, compositeID, action string) (string, error) {
	return c.s.Playback.SystemRecordedURL(ctx, playback.KindCutMergeOutput, compositeID, mediaServerID, action)
}

// roomResources extends recorded playback's check to meeting composites,
// which the engine serves by id like cut/merge outputs.
func (s *Server) roomResources(next playback.ResourceCheck) playback.ResourceCheck {
	return func(ctx context.Context, kind playback.ResourceKind, id string) (bool, string, error) {
		ok, why, err := false, "", error(nil)
		if next != nil {
			ok, why, err = next(ctx, kind, id)
		}
		if err != nil || ok || kind != playback.KindCutMergeOutput {
			return ok, why, err
		}
		if avail, err := s.Rooms.CompositeAvailable(ctx, id); err != nil || avail {
			return avail, "", err
		}
		return ok, why, nil
	}
}
