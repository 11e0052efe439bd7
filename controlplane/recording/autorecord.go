package recording

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// autoActor names the auto-record reconciler in node commands and
// sessions.
var autoActor = audit.Actor{Type: "system", ID: "auto-record"}

// Reconciler runs on the leader: it starts recording every enabled
// channel with autoRecord that has a media server, stops the automatic
// sessions of channels that no longer ask for it, and starts again on the
// engine whatever an active session wants recorded but the engine does not
// record (after an engine restart, recordings live only in the session).
type Reconciler struct {
	Recording *Service
	Log       *zap.Logger
	// Interval between passes (5 s when zero).
	Interval time.Duration
}

// Run reconciles until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	every := r.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.Log.Warn("auto-record pass failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PassResult counts what one pass did. Unplaced counts the channels that
// want recording on a media server the cluster does not know: no session
// is opened for them until it is enrolled.
type PassResult struct {
	Started, Stopped, Resumed, Failed, Unplaced int
}

// RunOnce makes one pass. Its reads are one listing of the channels that
// want recording, one of the active sessions and one of the media
// servers, whatever the number of channels; only a change is written.
func (r *Reconciler) RunOnce(ctx context.Context) (PassResult, error) {
	var res PassResult
	s := r.Recording
	known, err := s.knownServers(ctx)
	if err != nil {
		return res, err
	}
	active := map[string]Session{}
	for _, state := range []string{SessionRecording, SessionRequested} {
		for page := 1; ; page++ {
			ss, total, err := s.Sessions(ctx, SessionFilter{State: state, Page: page, PageSize: MaxPageSize})
			if err != nil {
				return res, err
			}
			for _, sess := range ss {
				active[sessionKey(sess.MediaServerID, sess.Vhost, sess.App, sess.StreamID)] = sess
			}
			if int64(page*MaxPageSize) >= total {
				break
			}
		}
	}
	var firstErr error
	start := func(ch channels.Channel, source string, segment int) {
		key := sessionKey(ch.MediaServerID, ch.Vhost, ch.App, ch.Stream)
		if _, ok := active[key]; ok {
			return
		}
		if known != nil && !known[ch.MediaServerID] {
			res.Unplaced++
			return
		}
		if _, err := s.Start(ctx, autoActor, StartRequest{StreamRef: StreamRef{ChannelID: string(ch.ChannelID)}, RecordSource: source,
			SegmentSeconds: segment}); err != nil {
			res.Failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("channel %s: %w", ch.ChannelID, err)
			}
			return
		}
		res.Started++
	}
	want := map[string]string{} // session keys auto-record and plans want, with the source
	yes := true
	for page := 1; ; page++ {
		chs, total, err := s.Channels.List(ctx, channels.Filter{AutoRecord: &yes, Page: page, PageSize: 1000})
		if err != nil {
			return res, err
		}
		for _, ch := range chs {
			if !ch.Enabled || ch.MediaServerID == "" {
				continue
			}
			want[sessionKey(ch.MediaServerID, ch.Vhost, ch.App, ch.Stream)] = RecordAuto
			start(ch, RecordAuto, 0)
		}
		if int64(page*1000) >= total {
			break
		}
	}
	if err := r.plans(ctx, want, start); err != nil {
		return res, err
	}
	// Active sessions: stop automatic and planned ones nobody wants; make
	// the engines record the others.
	byServer := map[string][]Session{}
	for key, sess := range active {
		if (sess.RecordSource == RecordAuto || sess.RecordSource == RecordPlan) && want[key] == "" {
			if _, err := s.Stop(ctx, autoActor, StreamRef{MediaServerID: sess.MediaServerID, Vhost: sess.Vhost, App: sess.App, StreamID: sess.StreamID}); err != nil {
				res.Failed++
				if firstErr == nil {
					firstErr = fmt.Errorf("stop %s/%s: %w", sess.App, sess.StreamID, err)
				}
				continue
			}
			res.Stopped++
			continue
		}
		byServer[sess.MediaServerID] = append(byServer[sess.MediaServerID], sess)
	}
	for server, ss := range byServer {
		var list engineapi.RecordingList
		if _, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: server}, Type: agentapi.TypeEngineRecordList,
			Reason: "auto-record check", Actor: autoActor, Read: true}, &list); err != nil {
			continue // an offline server is resumed when it is back
		}
		have := map[string]bool{}
		for _, rec := range list.Recordings {
			have[rec.Vhost+"/"+rec.App+"/"+rec.Stream] = true
		}
		for _, sess := range ss {
			if have[sess.Vhost+"/"+sess.App+"/"+sess.StreamID] {
				continue
			}
			ref := StreamRef{MediaServerID: sess.MediaServerID, Vhost: sess.Vhost, App: sess.App, StreamID: sess.StreamID}
			if _, err := s.resume(ctx, ref, sess); err != nil {
				res.Failed++
				continue
			}
			res.Resumed++
		}
	}
	if firstErr != nil {
		// One line a pass, not one per channel: a thousand channels on a
		// missing server must not flood the log every few seconds.
		r.Log.Warn("auto-record could not start or stop some channels", zap.Int("failed", res.Failed), zap.Error(firstErr))
	}
	return res, nil
}

// knownServers is the set of media servers enrolled in the cluster (nil
// when the service has no node list, and then every server counts).
func (s *Service) knownServers(ctx context.Context) (map[string]bool, error) {
	if s.Nodes == nil {
		return nil, nil
	}
	recs, err := s.Nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(recs))
	for _, rec := range recs {
		if rec.Status != nodes.StatusRetired {
			known[rec.MediaServerID] = true
		}
	}
	return known, nil
}

// resume asks the engine again to record what an active session wants.
func (s *Service) resume(ctx context.Context, r StreamRef, sess Session) (*Session, error) {
	var info engineapi.RecordingInfo
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: r.MediaServerID}, Type: agentapi.TypeEngineRecordStart,
		Payload: engineapi.StartRecordingRequest{Vhost: r.Vhost, App: r.App, Stream: r.StreamID, SegmentSeconds: sess.SegmentSeconds},
		Reason:  "resume recording " + r.App + "/" + r.StreamID, Actor: autoActor, Wait: s.engineWait()}, &info)
	return s.settle(ctx, r, sess.SessionID, o, err, SessionRecording, engineapi.CodeAlreadyRecording)
}

// plans starts recording the channels of every enabled plan whose slot
// holds now, and notes them in want.
func (r *Reconciler) plans(ctx context.Context, want map[string]string, start func(channels.Channel, string, int)) error {
	s := r.Recording
	plans, err := s.Plans(ctx, "")
	if err != nil {
		return err
	}
	now := s.now()
	for _, p := range plans {
		if !p.Enabled || !p.Evaluate(now).Hit {
			continue
		}
		for _, id := range p.ChannelIDs {
			ch, err := s.Channels.Get(ctx, channels.ChannelID(id))
			if err != nil || !ch.Enabled || ch.MediaServerID == "" {
				continue
			}
			key := sessionKey(ch.MediaServerID, ch.Vhost, ch.App, ch.Stream)
			if want[key] != "" {
				continue
			}
			want[key] = RecordPlan
			start(*ch, RecordPlan, p.SegmentSeconds)
		}
	}
	return nil
}

// EngineRecording is one stream an engine records, with the session the
// control plane keeps for it (empty when it has none).
type EngineRecording struct {
	engineapi.RecordingInfo
	SessionState string `json:"sessionState,omitempty"`
}

// EngineStatus asks a media host's engine what it records now (the actual
// state, next to the sessions' wanted state); app and stream filter.
// The engine's recording volume comes along (nil when it did not report
// one), and the files its retention pruned are marked Deleted.
func (s *Service) EngineStatus(ctx context.Context, nodeID, app, stream string) (mediaServerID string, out []EngineRecording,
	volume *engineapi.RecordingVolume, err error) {
	var list engineapi.RecordingList
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: nodeID}, Type: agentapi.TypeEngineRecordList,
		Reason: "recording status", Actor: autoActor, Read: true}, &list)
	if err != nil {
		return "", nil, nil, err
	}
	if err := s.markPruned(ctx, list.Volume); err != nil {
		return "", nil, nil, err
	}
	mediaServerID = o.Node.MediaServerID
	out = []EngineRecording{}
	for _, rec := range list.Recordings {
		if (app != "" && rec.App != app) || (stream != "" && rec.Stream != stream) {
			continue
		}
		e := EngineRecording{RecordingInfo: rec}
		if sess, err := s.Session(ctx, StreamRef{MediaServerID: mediaServerID, Vhost: rec.Vhost, App: rec.App, StreamID: rec.Stream}); err == nil && sess != nil {
			e.SessionState = sess.State
		}
		out = append(out, e)
	}
	return mediaServerID, out, list.Volume, nil
}
