package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

type scanResult struct {
	MediaServerID, NodeID                                   string
	FilesOnDisk, IndexedCount, RecoveredCount, MissingCount int
	Unchanged, Repaired, Unreadable                         int
	Indexed, Recovered, Missing                             []string
}

// TestRecordingFilesScan: after a real media host recorded an ffmpeg push
// in 2 s files, one file is moved off the recording root and a copy of
// another is put on it under a new file id (a file the index never
// knew). POST /api/v2/recording/files/scan (recordings.manage) indexes
// the copy (indexSource scan), marks the moved file Missing (not
// playable, a restore says so), and once the file is back a second scan
// makes it Completed again and changes nothing else.
func TestRecordingFilesScan(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) {})
	dataDir := cp.startMediaHost(bin, "media-1")
	var servers struct {
		Rows []struct{ RtspAddr string }
	}
	if st := cp.call("GET", "/api/v2/third-party/media-servers", nil, &servers); st != 200 || len(servers.Rows) != 1 {
		t.Fatalf("media servers: %d %+v", st, servers)
	}
	if st := cp.call("POST", "/api/v2/security/rtsp-auth", map[string]any{"mediaServerId": "media-1", "username": "encoder", "password": "encoder-Pa55word"}, nil); st != 200 {
		t.Fatalf("RTSP credential: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.play")}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("recordings.view")}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "scan",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/scan", 8)
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
	if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "scan"}, nil); st != 200 {
		t.Fatalf("stop recording: %d %s", st, body)
	}
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 30*time.Second, "three recorded files", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=scan", nil, &files)
		return files.Total >= 3
	})
	onDisk := map[string]string{} // file name -> path
	filepath.WalkDir(dataDir, func(p string, d os.DirEntry, _ error) error {
		if strings.HasSuffix(p, ".mp4") && !strings.Contains(p, "/cutmerge/") {
			onDisk[filepath.Base(p)] = p
		}
		return nil
	})
	moved, copied := files.Rows[0], files.Rows[1]
	movedPath, copiedPath := onDisk[moved.FileName], onDisk[copied.FileName]
	if movedPath == "" || copiedPath == "" || len(onDisk) != files.Total {
		t.Fatalf("files on disk %v, index %+v", onDisk, files.Rows)
	}
	aside := t.TempDir()
	for _, ext := range []string{"", ".idx"} {
		if err := os.Rename(movedPath+ext, filepath.Join(aside, "f"+ext)); err != nil {
			t.Fatal(err)
		}
	}
	// A copy under a new id: the sidecar names the file's id.
	newID := uuid.Must(uuid.NewV7()).String()
	copyPath := filepath.Join(filepath.Dir(copiedPath), "00-00-00-"+newID[len(newID)-8:]+".mp4")
	b, _ := os.ReadFile(copiedPath)
	os.WriteFile(copyPath, b, 0o640)
	idx, _ := os.ReadFile(copiedPath + ".idx")
	os.WriteFile(copyPath+".idx", []byte(strings.Replace(string(idx), copied.FileID, newID, 1)), 0o640)

	if st, body := viewer.call("POST", "/api/v2/recording/files/scan", map[string]any{"mediaServerId": "media-1"}, nil); st != 403 {
		t.Fatalf("scan without recordings.manage: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/files/scan", map[string]any{}, nil); st != 400 {
		t.Fatalf("scan without a media server: %d %s", st, body)
	}
	var res scanResult
	if st, body := be.call("POST", "/api/v2/recording/files/scan", map[string]any{"mediaServerId": "media-1"}, &res); st != 200 ||
		res.NodeID != "media-1" || res.FilesOnDisk != files.Total || res.IndexedCount != 1 || !slices.Equal(res.Indexed, []string{newID}) ||
		res.MissingCount != 1 || !slices.Equal(res.Missing, []string{moved.FileID}) || res.RecoveredCount != 0 || res.Unchanged != files.Total-1 {
		t.Fatalf("first scan: %d %s", st, body)
	}
	var one struct {
		Total int
		Rows  []struct{ FileID, FileState, IndexSource string }
	}
	be.call("GET", "/api/v2/recording/files?streamId=scan&indexSource=scan", nil, &one)
	if one.Total != 1 || one.Rows[0].FileID != newID || one.Rows[0].FileState != "Completed" {
		t.Fatalf("the scanned file: %+v", one)
	}
	be.call("GET", "/api/v2/recording/files?streamId=scan&fileState=Missing", nil, &one)
	if one.Total != 1 || one.Rows[0].FileID != moved.FileID {
		t.Fatalf("the missing file: %+v", one)
	}
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+moved.FileID+"/playback-lease", map[string]any{"protocols": []string{"http-fmp4"}}, nil); st != 409 {
		t.Fatalf("a lease of a Missing file: %d %s", st, body)
	}
	var restored struct{ Results []struct{ Success bool } }
	if st, body := be.call("POST", "/api/v2/recording/files/restore", map[string]any{"fileIds": []string{moved.FileID}}, &restored); st != 200 ||
		len(restored.Results) != 1 || restored.Results[0].Success {
		t.Fatalf("restore of a Missing file: %d %s", st, body)
	}

	for _, ext := range []string{"", ".idx"} {
		if err := os.Rename(filepath.Join(aside, "f"+ext), movedPath+ext); err != nil {
			t.Fatal(err)
		}
	}
	if st, body := be.call("POST", "/api/v2/recording/files/scan", map[string]any{"mediaServerId": "media-1", "streamId": "scan"}, &res); st != 200 ||
		res.FilesOnDisk != files.Total+1 || res.RecoveredCount != 1 || !slices.Equal(res.Recovered, []string{moved.FileID}) ||
		res.IndexedCount != 0 || res.MissingCount != 0 || res.Unchanged != files.Total {
		t.Fatalf("second scan: %d %s", st, body)
	}
	be.call("GET", "/api/v2/recording/files?streamId=scan&fileState=Completed", nil, &one)
	if one.Total != files.Total+1 {
		t.Fatalf("after the second scan %d files are Completed, want %d", one.Total, files.Total+1)
	}
}
