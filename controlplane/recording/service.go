package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/webhooks"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// engineCaller runs a node command on a media server's agent
// (mediaserver.Service).
type engineCaller interface {
	Do(ctx context.Context, c mediaserver.Call, out any) (mediaserver.Outcome, error)
}

// Actor is who asks for a change.
type Actor = audit.Actor

// Service is recording on the replicated store.
type Service struct {
	Store    store.Store
	Reader   query.Reader
	Channels *channels.Service
	Engines  engineCaller
	// Nodes lists the media hosts for the disk states.
	Nodes nodeLister
	// Playback issues recording-file leases.
	Playback *playback.Service
	// NodeID is this control node's id, for the events it writes.
	NodeID string
	// EngineWait bounds the wait for an engine's answer to a start or
	// stop (10 s when zero).
	EngineWait time.Duration
	// Callbacks guards cut/merge callback URLs like webhook endpoints
	// (nil: any http(s) URL).
	Callbacks *webhooks.TargetGuard
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	wakeOnce sync.Once
	wake     chan struct{}
}

// wakeCh is the channel that wakes the cut/merge worker.
func (s *Service) wakeCh() chan struct{} {
	s.wakeOnce.Do(func() { s.wake = make(chan struct{}, 1) })
	return s.wake
}

// wakeWorker tells this node's cut/merge worker (if it is the leader's)
// that a task is waiting.
func (s *Service) wakeWorker() {
	select {
	case s.wakeCh() <- struct{}{}:
	default:
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) engineWait() time.Duration {
	if s.EngineWait > 0 {
		return s.EngineWait
	}
	return 10 * time.Second
}

// StreamRef names what to record: a channel, or a stream on a media
// server.
type StreamRef struct {
	ChannelID     string
	MediaServerID string
	Vhost         string
	App           string
	StreamID      string
}

// StartRequest asks for a stream to be recorded.
type StartRequest struct {
	StreamRef
	// RecordSource is manual (default), auto or plan.
	RecordSource   string
	SegmentSeconds int
}

// nameOK bounds a name that becomes a store key segment and an engine
// directory.
func nameOK(v string) bool {
	return v != "" && len(v) <= 128 && !strings.ContainsAny(v, "/\\\x00") && v != "." && v != ".."
}

// resolve fills a reference from its channel and checks it.
func (s *Service) resolve(ctx context.Context, r StreamRef) (StreamRef, error) {
	if r.ChannelID != "" {
		ch, err := s.Channels.Get(ctx, channels.ChannelID(r.ChannelID))
		if errors.Is(err, channels.ErrNotFound) {
			return r, fmt.Errorf("%w: %q", ErrNoChannel, r.ChannelID)
		}
		if err != nil {
			return r, err
		}
		if r.MediaServerID == "" {
			r.MediaServerID = ch.MediaServerID
		}
		r.Vhost, r.App, r.StreamID = ch.Vhost, ch.App, ch.Stream
	} else if r.App != "" && r.StreamID != "" {
		if r.Vhost == "" {
			r.Vhost = channels.DefaultVhost
		}
		if ch, err := s.Channels.ByStream(ctx, r.Vhost, r.App, r.StreamID); err == nil {
			r.ChannelID = string(ch.ChannelID)
			if r.MediaServerID == "" {
				r.MediaServerID = ch.MediaServerID
			}
		}
	} else {
		return r, fmt.Errorf("%w: name a channelId, or app and streamId", ErrInvalid)
	}
	if r.MediaServerID == "" {
		return r, ErrNoServer
	}
	for name, v := range map[string]string{"mediaServerId": r.MediaServerID, "vhost": r.Vhost, "app": r.App, "streamId": r.StreamID} {
		if !nameOK(v) {
			return r, fmt.Errorf("%w: %s %q", ErrInvalid, name, v)
		}
	}
	return r, nil
}

// Start records a stream: it opens (or keeps) the stream's session and
// asks its media server's engine to record, waiting a few seconds for the
// answer. The session says how far it got: Recording, Failed with the
// engine's error, or Requested when the engine has not answered yet (the
// node command goes on).
func (s *Service) Start(ctx context.Context, actor audit.Actor, req StartRequest) (*Session, error) {
	r, err := s.resolve(ctx, req.StreamRef)
	if err != nil {
		return nil, err
	}
	src := req.RecordSource
	switch src {
	case "":
		src = RecordManual
	case RecordManual, RecordAuto, RecordPlan:
	default:
		return nil, fmt.Errorf("%w: recordSource %q is not manual, auto or plan", ErrInvalid, src)
	}
	if req.SegmentSeconds < 0 || req.SegmentSeconds > 86400 {
		return nil, fmt.Errorf("%w: segmentSeconds %d is not within 0-86400", ErrInvalid, req.SegmentSeconds)
	}
	now := s.now()
	sess, err := s.updateSession(ctx, r, func(cur *Session) (*Session, error) {
		if cur != nil && cur.Active() {
			return nil, nil // already asked for; the engine call below converges
		}
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		return &Session{SessionID: id.String(), MediaServerID: r.MediaServerID, ChannelID: r.ChannelID, Vhost: r.Vhost, App: r.App, StreamID: r.StreamID,
			State: SessionRequested, RecordSource: src, SegmentSeconds: req.SegmentSeconds, RequestedBy: who(actor), StartedAt: now, UpdatedAt: now}, nil
	})
	if err != nil {
		return nil, err
	}
	var info engineapi.RecordingInfo
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: r.MediaServerID}, Type: agentapi.TypeEngineRecordStart,
		Payload: engineapi.StartRecordingRequest{Vhost: r.Vhost, App: r.App, Stream: r.StreamID, SegmentSeconds: sess.SegmentSeconds},
		Reason:  "record " + r.App + "/" + r.StreamID, Actor: actor, Wait: s.engineWait()}, &info)
	return s.settle(ctx, r, sess.SessionID, o, err, SessionRecording, engineapi.CodeAlreadyRecording)
}

// Stop ends recording a stream; the engine finishes and reports its open
// file.
func (s *Service) Stop(ctx context.Context, actor audit.Actor, ref StreamRef) (*Session, error) {
	r, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	sess, err := s.Session(ctx, r)
	if err != nil {
		return nil, err
	}
	if sess == nil || !sess.Active() {
		return nil, fmt.Errorf("%w: %s/%s on %s", ErrNoSession, r.App, r.StreamID, r.MediaServerID)
	}
	var info engineapi.RecordingInfo
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: r.MediaServerID}, Type: agentapi.TypeEngineRecordStop,
		Payload: engineapi.StopRecordingRequest{Vhost: r.Vhost, App: r.App, Stream: r.StreamID},
		Reason:  "stop recording " + r.App + "/" + r.StreamID, Actor: actor, Wait: s.engineWait()}, &info)
	return s.settle(ctx, r, sess.SessionID, o, err, SessionStopped, engineapi.CodeNotRecording)
}

// settle moves a session to the outcome of its node command: target when
// the engine did it (or answered converged), Failed with its error, or
// unchanged while the command goes on.
func (s *Service) settle(ctx context.Context, r StreamRef, sessionID string, o mediaserver.Outcome, callErr error, target, converged string) (*Session, error) {
	var ce *mediaserver.CommandError
	state, lastErr := target, ""
	switch {
	case callErr == nil && !o.Done:
		state = ""
	case callErr == nil, errors.As(callErr, &ce) && ce.Code == converged:
	case o.Command != nil:
		state, lastErr = SessionFailed, callErr.Error()
	default:
		return nil, callErr // the agent could not be asked at all
	}
	now := s.now()
	return s.updateSession(ctx, r, func(cur *Session) (*Session, error) {
		if cur == nil || cur.SessionID != sessionID {
			return nil, nil
		}
		next := *cur
		if o.Command != nil {
			next.CommandID = o.Command.CommandID
		}
		if state != "" {
			next.State, next.LastError, next.UpdatedAt = state, lastErr, now
			if state == SessionStopped {
				next.StoppedAt = &now
			}
		}
		return &next, nil
	})
}

// Session reads a stream's session; nil when it has none.
func (s *Service) Session(ctx context.Context, r StreamRef) (*Session, error) {
	kv, _, err := store.Get(ctx, s.Store, sessionKey(r.MediaServerID, r.Vhost, r.App, r.StreamID), store.Local)
	if err != nil || kv == nil {
		return nil, err
	}
	return decodeSession(kv)
}

func decodeSession(kv *store.KeyValue) (*Session, error) {
	sess, err := store.Decode[Session](kv)
	if err != nil {
		return nil, err
	}
	sess.Revision = kv.ModRevision
	return &sess, nil
}

// updateSession is a read-modify-write of a stream's session: fn gets the
// current one (nil when none) and returns the next, or nil to keep it.
func (s *Service) updateSession(ctx context.Context, r StreamRef, fn func(cur *Session) (*Session, error)) (*Session, error) {
	key := sessionKey(r.MediaServerID, r.Vhost, r.App, r.StreamID)
	var out *Session
	_, err := store.Update(ctx, s.Store, key, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		var cur *Session
		if kv != nil {
			var err error
			if cur, err = decodeSession(kv); err != nil {
				return nil, nil, nil, err
			}
		}
		next, err := fn(cur)
		if err != nil {
			return nil, nil, nil, err
		}
		out = cur
		if next == nil || next == cur {
			return nil, nil, nil, errNoChange
		}
		out = next
		b, err := json.Marshal(next)
		return b, nil, nil, err
	})
	switch {
	case errors.Is(err, errNoChange):
		return out, nil
	case errors.Is(err, store.ErrContended):
		return nil, fmt.Errorf("%w: %w", ErrContended, err)
	}
	return out, err
}

// errNoChange ends an updateSession that has nothing to write.
var errNoChange = errors.New("recording: no change")

func who(a audit.Actor) string {
	if a.Type == "" {
		return "system"
	}
	return a.Type + ":" + a.ID
}

// completedEvent is recording.file.completed's data, with contract A's
// property names exactly (sizes and durations are strings there).
type completedEvent struct {
	MediaServerID string    `json:"MediaServerId"`
	Vhost         string    `json:"Vhost"`
	App           string    `json:"App"`
	StreamID      string    `json:"streamId"`
	FileName      *string   `json:"fileName"`
	FileSize      *string   `json:"fileSize"`
	Duration      *string   `json:"duration"`
	OccurredAtUTC time.Time `json:"occurredAtUtc"`
}

// FileCompleted indexes a finished file an engine reported with
// on_record_mp4 and writes recording.file.completed in the same Txn. A
// file already indexed (the engine repeats a report it is not sure was
// taken) changes nothing: each file is indexed and announced once.
func (s *Service) FileCompleted(ctx context.Context, mediaServerID, nodeID string, h engineapi.RecordMP4Hook) (*File, bool, error) {
	source := IndexFromHook
	if h.Reason == "repaired" {
		source = IndexFromRepair
	}
	return s.indexFile(ctx, mediaServerID, nodeID, h, source)
}

// indexFile indexes a finished file once, with its event, noting where
// the index learnt of it (source).
func (s *Service) indexFile(ctx context.Context, mediaServerID, nodeID string, h engineapi.RecordMP4Hook, source string) (*File, bool, error) {
	if _, err := uuid.Parse(h.FileID); err != nil {
		return nil, false, fmt.Errorf("%w: fileId %q is not a UUID", ErrInvalid, h.FileID)
	}
	if !nameOK(h.FileName) || h.FileSize < 0 || h.TimeLen < 0 || h.StartTime.IsZero() || strings.HasPrefix(h.FilePath, "/") ||
		strings.Contains("/"+h.FilePath+"/", "/../") || !strings.HasSuffix(h.FilePath, "/"+h.FileName) {
		return nil, false, fmt.Errorf("%w: on_record_mp4 for %s names no usable file", ErrInvalid, h.FileID)
	}
	vhost := h.Vhost
	if vhost == "" {
		vhost = channels.DefaultVhost
	}
	now := s.now()
	start := h.StartTime.UTC()
	dur := time.Duration(h.TimeLen * float64(time.Second))
	end := start.Add(dur)
	f := &File{FileID: h.FileID, MediaServerID: mediaServerID, NodeID: nodeID, Vhost: vhost, App: h.App, StreamID: h.Stream,
		FileName: h.FileName, RelPath: h.FilePath, FileSize: h.FileSize, StartTime: start, EndTime: end, StartMs: start.UnixMilli(),
		EndMs: end.UnixMilli(), DurationMs: dur.Milliseconds(), Frames: h.Frames, Codecs: h.Codecs, FileState: FileCompleted,
		RecordDate: start.Format("2006-01-02"), SourceHook: SourceHookRecordMP4, IndexSource: source, CloseReason: h.Reason, IndexedAt: now,
		Fallback: h.Fallback}
	r := StreamRef{MediaServerID: mediaServerID, Vhost: vhost, App: h.App, StreamID: h.Stream}
	if sess, err := s.Session(ctx, r); err == nil && sess != nil {
		f.SessionID, f.ChannelID = sess.SessionID, sess.ChannelID
	}
	if f.ChannelID == "" {
		if ch, err := s.Channels.ByStream(ctx, vhost, h.App, h.Stream); err == nil {
			f.ChannelID = string(ch.ChannelID)
		}
	}
	val, err := json.Marshal(f)
	if err != nil {
		return nil, false, err
	}
	size, secs := strconv.FormatInt(h.FileSize, 10), strconv.FormatFloat(dur.Seconds(), 'f', 3, 64)
	ev, err := events.New(events.RecordingFileCompleted, events.SourceRecording, s.NodeID, completedEvent{MediaServerID: mediaServerID, Vhost: vhost,
		App: h.App, StreamID: h.Stream, FileName: &f.FileName, FileSize: &size, Duration: &secs, OccurredAtUTC: now})
	if err != nil {
		return nil, false, err
	}
	evOp, err := events.Op(ev)
	if err != nil {
		return nil, false, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(fileKey(f.FileID))},
		Then: []store.Op{store.Put(fileKey(f.FileID), val), evOp}})
	if err != nil {
		return nil, false, err
	}
	if !resp.Succeeded {
		return f, false, nil
	}
	if f.SessionID != "" {
		// The session's counters are a convenience; the file is indexed.
		_, _ = s.updateSession(ctx, r, func(cur *Session) (*Session, error) {
			if cur == nil || cur.SessionID != f.SessionID {
				return nil, nil
			}
			next := *cur
			next.Files++
			next.Bytes += f.FileSize
			return &next, nil
		})
	}
	return f, true, nil
}

// File reads one file's index entry.
func (s *Service) File(ctx context.Context, id string) (*File, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	kv, _, err := store.Get(ctx, s.Store, fileKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	f, err := store.Decode[File](kv)
	if err != nil {
		return nil, err
	}
	return &f, nil
}
