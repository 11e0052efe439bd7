package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRecordingPlanRetention: a real media host records two ffmpeg pushes
// in 2 s files, one the stream of a channel whose plan keeps 2 days
// (retentionDays), the other no channel's. The leader's plan retention,
// run with its clock 47 h ahead, deletes nothing; 49 h ahead it
// hard-deletes exactly the channel's files (Deleted in the index, their
// bytes gone from the engine: the media route no longer serves them),
// while the other stream's files stay Completed and playable.
func TestRecordingPlanRetention(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) {})
	cp.startMediaHost(bin, "media-1")
	var servers struct {
		Rows []struct{ RtspAddr string }
	}
	if st := cp.call("GET", "/api/v2/third-party/media-servers", nil, &servers); st != 200 || len(servers.Rows) != 1 {
		t.Fatalf("media servers: %d %+v", st, servers)
	}
	if st := cp.call("POST", "/api/v2/security/rtsp-auth", map[string]any{"mediaServerId": "media-1", "username": "encoder", "password": "encoder-Pa55word"}, nil); st != 200 {
		t.Fatalf("RTSP credential: %d", st)
	}
	cam := startCamera(t)
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Kept two days", "protocol": "rtsp", "mediaServerId": "media-1",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "kept"}, &ch); st != 200 || ch.ChannelID == "" {
		t.Fatalf("create channel: %d %+v", st, ch)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.play", "channels.manage")}
	var plan struct{ PlanID string }
	if st, body := be.call("POST", "/api/v2/recording/plans", map[string]any{"name": "two days", "timeZone": "UTC", "enabled": false,
		"channelIds": []string{ch.ChannelID}, "retentionDays": 2, "weekly": []map[string]string{{"day": "monday", "start": "00:00", "end": "01:00"}}},
		&plan); st != 200 {
		t.Fatalf("create plan: %d %s", st, body)
	}
	for _, stream := range []string{"kept", "other"} {
		if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": stream,
			"segmentSeconds": 2}, nil); st != 200 {
			t.Fatalf("start recording %s: %d %s", stream, st, body)
		}
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start the channel: %d %s", st, body)
	}
	other := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/other", 7)
	if err := other.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
	type fileList struct {
		Total int
		Rows  []recordingFile
	}
	var keptFiles, otherFiles fileList
	testkit.Eventually(t, 30*time.Second, "both streams' files indexed", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=kept&fileState=Completed&pageSize=100", nil, &keptFiles)
		be.call("GET", "/api/v2/recording/files?streamId=other&fileState=Completed&pageSize=100", nil, &otherFiles)
		return keptFiles.Total >= 2 && otherFiles.Total >= 2
	})
	// Each stop answers how many files its recording finished; every one
	// is indexed before the sweep runs.
	finished := map[string]int64{}
	for _, stream := range []string{"kept", "other"} {
		var sess struct{ Files int64 }
		if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": stream}, &sess); st != 200 {
			t.Fatalf("stop recording %s: %d %s", stream, st, body)
		}
		finished[stream] = sess.Files
	}
	testkit.Eventually(t, 30*time.Second, "every finished file indexed", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=kept&pageSize=100", nil, &keptFiles)
		be.call("GET", "/api/v2/recording/files?streamId=other&pageSize=100", nil, &otherFiles)
		return int64(keptFiles.Total) >= finished["kept"] && int64(otherFiles.Total) >= finished["other"]
	})
	t.Logf("files finished by the stops %v; indexed: kept %d, other %d", finished, keptFiles.Total, otherFiles.Total)
	for _, f := range keptFiles.Rows {
		if f.ChannelID != ch.ChannelID {
			t.Fatalf("file %s of the channel's stream has channel %q", f.FileID, f.ChannelID)
		}
	}
	ctx := context.Background()
	if n, err := cp.s.Recording.SweepPlanRetention(ctx, time.Now().Add(47*time.Hour)); err != nil || n != 0 {
		t.Fatalf("47 h on: %d deleted, %v", n, err)
	}
	n, err := cp.s.Recording.SweepPlanRetention(ctx, time.Now().Add(49*time.Hour))
	if err != nil || n != keptFiles.Total {
		t.Fatalf("49 h on: %d of %d deleted, %v", n, keptFiles.Total, err)
	}
	var after fileList
	be.call("GET", "/api/v2/recording/files?streamId=kept&fileState=Deleted&pageSize=100", nil, &after)
	if after.Total != keptFiles.Total {
		t.Fatalf("%d of the channel's %d files Deleted", after.Total, keptFiles.Total)
	}
	be.call("GET", "/api/v2/recording/files?streamId=other&fileState=Completed&pageSize=100", nil, &after)
	if after.Total != otherFiles.Total {
		t.Fatalf("%d of the other stream's %d files still Completed", after.Total, otherFiles.Total)
	}
	if st, _ := be.call("GET", "/api/v2/recording/files/"+keptFiles.Rows[0].FileID+"/media", nil, nil); st/100 == 2 {
		t.Fatalf("a deleted file still plays: %d", st)
	}
	if st, body := be.call("GET", "/api/v2/recording/files/"+otherFiles.Rows[0].FileID+"/media", nil, nil); st != 200 {
		t.Fatalf("a kept file: %d %.200s", st, body)
	}
}
