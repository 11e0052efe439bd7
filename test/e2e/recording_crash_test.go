package e2e

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRecordingSurvivesEngineKill: kill -9 of the engine in the middle of
// a recorded file. The agent starts a new engine, which repairs the open
// file to its last whole fragment and reports it: the file is indexed once
// (indexSource repair) with one recording.file.completed, its media ends
// within about a second of the kill, it plays through a lease, and the
// leader's reconciler has the new engine record the stream again.
func TestRecordingSurvivesEngineKill(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Dock camera", "protocol": "rtsp",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "dock", "mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.play", "channels.manage", "streams.view")}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"channelId": ch.ChannelID, "segmentSeconds": 600}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("channel start: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the stream Online", func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId=dock&state=Online", nil, &ss)
		return ss.Total == 1
	})
	online := time.Now()
	// Six seconds of recording: several parts are on disk, one is open.
	testkit.Eventually(t, 30*time.Second, "six seconds of recording", func() bool { return time.Since(online) > 6*time.Second })
	var proc struct{ Pid int }
	if st := cp.call("GET", "/api/v2/node/engine/process?nodeId=media-1", nil, &proc); st != 200 || proc.Pid == 0 {
		t.Fatalf("engine process: %d %+v", st, proc)
	}
	killed := time.Now()
	if err := syscall.Kill(proc.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", proc.Pid, err)
	}
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 90*time.Second, "the repaired file indexed", func() bool {
		be.call("GET", "/api/v2/recording/files?channelId="+ch.ChannelID+"&indexSource=repair", nil, &files)
		return files.Total == 1
	})
	f := files.Rows[0]
	gap := killed.Sub(f.EndTime)
	t.Logf("repaired file: %d ms from %s; its media ends %s before the kill", f.DurationMs, f.StartTime.Format(time.RFC3339Nano), gap)
	if gap > 1500*time.Millisecond || gap < -500*time.Millisecond || f.DurationMs < 4000 {
		t.Fatalf("the repaired file ends %s before the kill and lasts %d ms", gap, f.DurationMs)
	}
	// The new engine records again (the reconciler resumed the session).
	testkit.Eventually(t, 60*time.Second, "recording resumed on the new engine", func() bool {
		var list struct {
			Recordings []struct{ Stream, State string }
		}
		var cmd struct{ CommandID string }
		if st := cp.call("POST", "/api/v2/nodes/media-1/commands", map[string]any{"commandType": "engine.record.list", "waitSeconds": 10}, &cmd); st != 200 {
			return false
		}
		var detail struct {
			Result json.RawMessage
		}
		cp.call("GET", "/api/v2/node/commands/"+cmd.CommandID+"/detail", nil, &detail)
		json.Unmarshal(detail.Result, &list)
		return len(list.Recordings) == 1 && list.Recordings[0].Stream == "dock"
	})
	// Once: one index entry, one event for its file name.
	n := 0
	for _, ev := range cp.events("recording.file.completed") {
		var data struct{ FileName string }
		json.Unmarshal(ev.Data, &data)
		if data.FileName == f.FileName {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d recording.file.completed events for the repaired file", n)
	}
	var ls lease
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/playback-lease", map[string]any{}, &ls); st != 200 {
		t.Fatalf("lease of the repaired file: %d %s", st, body)
	}
	pr, err := probe(t, ls.Sources[0].URL, 30)
	if err != nil || pr.codec != "h264" || pr.span < float64(f.DurationMs)/1000-1.5 {
		t.Fatalf("ffprobe of the repaired file: %+v %v", pr, err)
	}
}
