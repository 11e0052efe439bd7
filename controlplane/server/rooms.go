package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/controlplane/streams"
)

// roomSweepInterval is how often the leader looks for silent participants
// and empty rooms: a participant ends within this much past its
// heartbeat timeout.
const roomSweepInterval = 5 * time.Second

// startRooms assembles meeting rooms: the domain, its engine tickets and
// the relay of signalling to the rooms' media servers.
func (s *Server) startRooms(cfg config.Config, keys *keyring.Keyring) {
	urls := streams.MediaURLs{Nodes: s.agents.nodes}
	s.Rooms = &rooms.Service{Store: s.Node, Reader: s.Node.State(), NodeID: cfg.NodeID, MACKeys: keys.SubKeys("rtc-engine-ticket"),
		Media: rooms.EngineMedia{BaseURL: urls.BaseURL, Pick: func(ctx context.Context) (string, error) {
			rec, err := s.agents.nodes.Resolve(ctx, "", "")
			if err != nil {
				return "", err
			}
			return rec.MediaServerID, nil
		}}, Recorder: roomRecorder{s.Recording}, Archive: roomArchive{s.Recording},
		Exporter: roomExporter{s.Recording}, Composer: roomComposer{s},
		Issuer: func(ctx context.Context, credentialID, perm string) (bool, error) {
			// The same answer playback grants get: the token or console
			// session as it is now, within its owner's permissions.
			ts, err := s.Playback.Tokens(ctx, credentialID)
			if err != nil {
				return false, err
			}
			return ts.Valid && permission.Grants(ts.Permissions, perm), nil
		}}
	s.Playback.Resources = s.roomResources(s.Playback.Resources)
}

// roomArchive reads the files recorded of room streams from the
// recording index.
type roomArchive struct{ rec *recording.Service }

func (a roomArchive) StreamFiles(ctx context.Context, mediaServerID, stream string, from, to time.Time) ([]rooms.TrackFile, error) {
	var out []rooms.TrackFile
	for page := 1; ; page++ {
		files, total, err := a.rec.Files(ctx, recording.FileFilter{MediaServerID: mediaServerID, App: rooms.App, StreamID: stream, Start: &from, End: &to,
			Page: page, PageSize: recording.MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, rooms.TrackFile{FileID: f.FileID, Start: f.StartTime, DurationMs: f.DurationMs, Codecs: f.Codecs})
		}
		if int64(page*recording.MaxPageSize) >= total {
			return out, nil
		}
	}
}

func (a roomArchive) FileURL(ctx context.Context, fileID, action string) (string, error) {
	_, u, err := a.rec.FileURL(ctx, fileID, action)
	return u, err
}

// roomExporter cuts room exports with the recording service's cut/merge
// (the engine copies the range's fragments into one MP4).
type roomExporter struct{ rec *recording.Service }

var roomExportActor = audit.Actor{Type: "system", ID: "rtc-export"}

func (e roomExporter) Cut(ctx context.Context, mediaServerID, stream string, from, to time.Time) (string, error) {
	t, err := e.rec.CreateCutMerge(ctx, roomExportActor, recording.CutMergeRequest{StreamRef: recording.StreamRef{MediaServerID: mediaServerID,
		App: rooms.App, StreamID: stream}, Start: from, End: to})
	if errors.Is(err, recording.ErrNoRecordings) {
		return "", rooms.ErrNoCutMedia
	}
	if err != nil {
		return "", err
	}
	return t.TaskID, nil
}

func (e roomExporter) CutState(ctx context.Context, cutID string) (string, error) {
	t, err := e.rec.CutMergeTaskByID(ctx, cutID)
	if err != nil {
		return "", err
	}
	return t.TaskStatus, nil
}

func (e roomExporter) CutURL(ctx context.Context, cutID, action string) (string, error) {
	return e.rec.OutputURL(ctx, cutID, action)
}

// roomRecorder records room streams through the recording service, as
// manual recordings of app rooms.App on the room's media server.
type roomRecorder struct{ rec *recording.Service }

var roomRecordingActor = audit.Actor{Type: "system", ID: "rtc-recording"}

func (r roomRecorder) StartStream(ctx context.Context, mediaServerID, stream string) error {
	sess, err := r.rec.Start(ctx, roomRecordingActor, recording.StartRequest{StreamRef: recording.StreamRef{MediaServerID: mediaServerID, App: rooms.App,
		StreamID: stream}})
	if err != nil {
		return err
	}
	if sess.State == recording.SessionFailed {
		return fmt.Errorf("recording %s: %s", stream, sess.LastError)
	}
	return nil
}

// Failed reports whether the stream's recording session failed on its
// media server (the sweep then starts it again).
func (r roomRecorder) Failed(ctx context.Context, mediaServerID, stream string) (bool, error) {
	sess, err := r.rec.Session(ctx, recording.StreamRef{MediaServerID: mediaServerID, Vhost: channels.DefaultVhost, App: rooms.App, StreamID: stream})
	if err != nil || sess == nil {
		return false, err
	}
	return sess.State == recording.SessionFailed, nil
}

func (r roomRecorder) StopStream(ctx context.Context, mediaServerID, stream string) (bool, error) {
	sess, err := r.rec.Stop(ctx, roomRecordingActor, recording.StreamRef{MediaServerID: mediaServerID, App: rooms.App, StreamID: stream})
	if errors.Is(err, recording.ErrNoSession) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	switch sess.State {
	case recording.SessionFailed:
		return false, fmt.Errorf("stop recording %s: %s", stream, sess.LastError)
	case recording.SessionStopped:
		return true, nil
	}
	return false, nil // the engine has not answered yet
}
