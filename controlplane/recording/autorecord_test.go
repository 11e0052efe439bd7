package recording

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// recordingEngine answers record starts and lists as an engine that
// records what it is asked to; it counts the starts.
type recordingEngine struct {
	mu     sync.Mutex
	starts int
	have   []engineapi.RecordingInfo
}

func (e *recordingEngine) Do(_ context.Context, c mediaserver.Call, out any) (mediaserver.Outcome, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	done := mediaserver.Outcome{Node: &nodes.Record{NodeID: c.MediaServerID, MediaServerID: c.MediaServerID}, Done: true}
	switch c.Type {
	case agentapi.TypeEngineRecordStart:
		req := c.Payload.(engineapi.StartRecordingRequest)
		e.starts++
		e.have = append(e.have, engineapi.RecordingInfo{Vhost: req.Vhost, App: req.App, Stream: req.Stream, State: "waiting"})
		return done, nil
	case agentapi.TypeEngineRecordList:
		out.(*engineapi.RecordingList).Recordings = append([]engineapi.RecordingInfo(nil), e.have...)
		return done, nil
	}
	return mediaserver.Outcome{}, fmt.Errorf("unexpected %s", c.Type)
}

// TestAutoRecordPass: a pass opens one session per channel that wants
// recording on a known media server, none for a server the cluster does
// not know (counted as unplaced, with no write), and a second pass
// changes nothing and asks the engine for nothing new.
func TestAutoRecordPass(t *testing.T) {
	s := newService(t)
	eng := &recordingEngine{}
	s.Engines = eng
	s.Nodes = nodeList{{NodeID: "media-1", MediaServerID: "media-1", Status: nodes.StatusOnline}}
	ctx := context.Background()
	for i, server := range []string{"media-1", "media-1", "ghost", "ghost", "ghost"} {
		name, stream, proto, src, yes := fmt.Sprintf("cam %d", i), fmt.Sprintf("cam%d", i), channels.Protocol("rtsp"), "rtsp://10.0.0.1/s", true
		app := "live"
		if _, err := s.Channels.Create(ctx, channels.Actor{}, channels.Input{Name: &name, Protocol: &proto, App: &app, Stream: &stream, SourceURL: &src,
			Enabled: &yes, AutoRecord: &yes, MediaServerID: &server}); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{Recording: s, Log: zaptest.NewLogger(t)}
	res, err := r.RunOnce(ctx)
	if err != nil || res != (PassResult{Started: 2, Unplaced: 3}) {
		t.Fatalf("first pass %+v %v", res, err)
	}
	revision := s.Store.(interface{ Revision() int64 }).Revision
	rev := revision()
	res, err = r.RunOnce(ctx)
	if err != nil || res != (PassResult{Unplaced: 3}) {
		t.Fatalf("second pass %+v %v", res, err)
	}
	if now := revision(); now != rev {
		t.Fatalf("a pass with nothing to change wrote: revision %d -> %d", rev, now)
	}
	if eng.starts != 2 {
		t.Fatalf("the engine was asked to start %d times", eng.starts)
	}
	ss, total, err := s.Sessions(ctx, SessionFilter{PageSize: MaxPageSize})
	if err != nil || total != 2 {
		t.Fatalf("sessions %+v %d %v", ss, total, err)
	}
	for _, sess := range ss {
		if sess.MediaServerID != "media-1" || sess.State != SessionRecording || sess.RecordSource != RecordAuto {
			t.Fatalf("session %+v", sess)
		}
	}
}
