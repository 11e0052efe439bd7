package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/store"
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

// TestRecordingPlanRetentionLoop: the leader's own plan retention loop
// (its interval set to 1 s), not a sweep the test calls, hard-deletes a
// file of a channel whose plan keeps 1 day once that file ended 3 days
// ago, and keeps the channel's files recorded minutes ago. The file is
// made old by moving its index row's times back (the bytes on the engine
// stay what they are); the loop runs on the real clock.
func TestRecordingPlanRetentionLoop(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) { c.RecordingDiskSweepInterval = time.Second })
	cp.startMediaHost(bin, "media-1")
	cam := startCamera(t)
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Kept one day", "protocol": "rtsp", "mediaServerId": "media-1",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "daily"}, &ch); st != 200 || ch.ChannelID == "" {
		t.Fatalf("create channel: %d %+v", st, ch)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/recording/plans", map[string]any{"name": "one day", "timeZone": "UTC", "enabled": false,
		"channelIds": []string{ch.ChannelID}, "retentionDays": 1, "weekly": []map[string]string{{"day": "monday", "start": "00:00", "end": "01:00"}}},
		nil); st != 200 {
		t.Fatalf("create plan: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "daily",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start the channel: %d %s", st, body)
	}
	type fileList struct {
		Total int
		Rows  []recordingFile
	}
	var files fileList
	testkit.Eventually(t, 60*time.Second, "three of the channel's files indexed", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=daily&fileState=Completed&pageSize=100", nil, &files)
		return files.Total >= 3
	})
	var sess struct{ Files int64 }
	if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "daily"}, &sess); st != 200 {
		t.Fatalf("stop recording: %d %s", st, body)
	}
	testkit.Eventually(t, 30*time.Second, "every finished file indexed", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=daily&pageSize=100", nil, &files)
		return int64(files.Total) >= sess.Files
	})
	// Many passes of the loop have run meanwhile (the files took seconds
	// to record): none of these files is due.
	for _, f := range files.Rows {
		if f.FileState != "Completed" {
			t.Fatalf("file %s is %s before any is due", f.FileID, f.FileState)
		}
	}
	old := files.Rows[0]
	back := 72 * time.Hour
	if _, err := store.UpdateRecord(context.Background(), cp.s.Node, recording.FilePrefix+old.FileID,
		func(cur *recording.File) (*recording.File, []store.Op, []store.Compare, error) {
			cur.StartTime, cur.EndTime = cur.StartTime.Add(-back), cur.EndTime.Add(-back)
			cur.StartMs, cur.EndMs = cur.StartTime.UnixMilli(), cur.EndTime.UnixMilli()
			cur.RecordDate = cur.StartTime.Format(time.DateOnly)
			return cur, nil, nil, nil
		}); err != nil {
		t.Fatalf("moving file %s 3 days back: %v", old.FileID, err)
	}
	var deleted fileList
	testkit.Eventually(t, 60*time.Second, "the loop deleting the expired file", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=daily&fileState=Deleted&pageSize=100", nil, &deleted)
		return deleted.Total > 0
	})
	if deleted.Total != 1 || deleted.Rows[0].FileID != old.FileID {
		t.Fatalf("deleted %+v, want only %s", deleted.Rows, old.FileID)
	}
	if st, _ := be.call("GET", "/api/v2/recording/files/"+old.FileID+"/media", nil, nil); st/100 == 2 {
		t.Fatalf("the expired file still plays: %d", st)
	}
	// The pass that deleted it found the others not due: they stay.
	var kept fileList
	be.call("GET", "/api/v2/recording/files?streamId=daily&fileState=Completed&pageSize=100", nil, &kept)
	if kept.Total != files.Total-1 {
		t.Fatalf("%d of the %d recent files still Completed", kept.Total, files.Total-1)
	}
	if st, body := be.call("GET", "/api/v2/recording/files/"+kept.Rows[0].FileID+"/media", nil, nil); st != 200 {
		t.Fatalf("a recent file: %d %.200s", st, body)
	}
}
