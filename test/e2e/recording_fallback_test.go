package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRecordingFallbackRootAndRecovery: a real media host records an
// ffmpeg push in 2 s files with a fallback root (recording.fallbackRoot
// applied through the agent, no restart). A tmpfs mounted over the
// primary root (a swapped disk) sends new files to the fallback instead
// of refusing them: they are indexed, listed by GET
// /api/v2/recording/disk/fallback-recovery and decode in ffprobe where
// they lie. With the primary back, recording returns to it; the preview
// says WouldMove, the run moves them (Moved, the fallback emptied, the
// files under the primary root), a second run finds them OnPrimary, and
// the same fileId still plays through GET .../files/{fileId}/media with
// every byte. Bad requests and missing permissions are refused.
func TestRecordingFallbackRootAndRecovery(t *testing.T) {
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
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage")}
	var roots struct{ Items []struct{ Path string } }
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 || roots.Items[0].Path == "" {
		t.Fatalf("recording roots: %d %s", st, body)
	}
	root := roots.Items[0].Path
	// A fallback root nested with the primary is refused where it is
	// configured, and nothing is written.
	var refused struct{ Code, Message string }
	for _, nested := range []string{filepath.Join(root, "nested"), filepath.Dir(root), root} {
		if st := cp.call("POST", "/api/v2/node/engine/config/apply", map[string]any{"settings": map[string]any{"recording": map[string]any{
			"fallbackRoot": nested}}, "reason": "e2e nested fallback root"}, &refused); st != 400 || refused.Code != "recording_fallback_root_overlaps" {
			t.Fatalf("apply a nested fallback root %s: %d %+v", nested, st, refused)
		}
	}
	fallback := filepath.Join(t.TempDir(), "fallback")
	var applied struct{ Applied, Reloaded bool }
	if st := cp.call("POST", "/api/v2/node/engine/config/apply", map[string]any{"settings": map[string]any{"recording": map[string]any{
		"fallbackRoot": fallback}}, "reason": "e2e fallback root"}, &applied); st != 200 || !applied.Applied || !applied.Reloaded {
		t.Fatalf("apply the fallback root: %d %+v", st, applied)
	}
	// Both roots are bound to their disks by validation (the engine never
	// writes a marker by itself).
	for _, dir := range []string{root, fallback} {
		var bind struct{ Valid, Bound bool }
		if st, body := be.call("POST", "/api/v2/recording/disk/validate-root", map[string]any{"mediaServerId": "media-1", "path": dir}, &bind); st != 200 ||
			!bind.Valid || !bind.Bound {
			t.Fatalf("validate %s: %d %s", dir, st, body)
		}
	}
	if _, err := os.Stat(filepath.Join(fallback, ".svc-disk-identity")); err != nil {
		t.Fatalf("the fallback root is not bound to a disk identity: %v", err)
	}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("recordings.view")}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "fb",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/fb", 40)
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 30*time.Second, "a recorded file on the primary", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=fb", nil, &files)
		return files.Total >= 1
	})
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount a tmpfs over the root (the test runs as root): %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			unix.Unmount(root, unix.MNT_DETACH)
		}
	})
	var onFallback struct {
		Total int
		Items []fallbackFile
	}
	testkit.Eventually(t, 30*time.Second, "files recorded on the fallback root", func() bool {
		be.call("GET", "/api/v2/recording/disk/fallback-recovery?limit=50", nil, &onFallback)
		return onFallback.Total >= 2
	})
	var states struct {
		Items []struct {
			State        string
			RefusedFiles int64
		}
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/states", nil, &states); st != 200 || len(states.Items) != 1 ||
		states.Items[0].State != "Mismatch" || states.Items[0].RefusedFiles != 0 {
		t.Fatalf("disk states while on the fallback: %d %s", st, body)
	}
	fb := onFallback.Items[0]
	var found string
	filepath.WalkDir(fallback, func(p string, d os.DirEntry, _ error) error {
		if d != nil && d.Name() == fb.FileName {
			found = p
		}
		return nil
	})
	if found == "" || fb.MediaServerID != "media-1" || fb.StreamID != "fb" || fb.FileState != "Completed" {
		t.Fatalf("fallback file %+v not under %s", fb, fallback)
	}
	if p := probeFile(t, found); p.videoCodec != "h264" || p.videoFrames < 25 || p.audioCodec != "aac" {
		t.Fatalf("the fallback file decodes as %+v", p)
	}
	// A scan walks the fallback root too: its files are on disk (none
	// turns Missing) and stay marked fallback. The files of the swapped
	// primary are hidden under the tmpfs, so they are Missing until a
	// scan finds them again.
	type scanResult struct {
		FilesOnDisk, MissingCount, RelocatedCount, RecoveredCount int
		Missing                                                   []string
	}
	var scan scanResult
	if st, body := be.call("POST", "/api/v2/recording/files/scan", map[string]any{"mediaServerId": "media-1", "streamId": "fb"}, &scan); st != 200 ||
		scan.RelocatedCount != 0 || scan.FilesOnDisk < onFallback.Total || scan.MissingCount == 0 {
		t.Fatalf("scan while files are on the fallback: %d %s", st, body)
	}
	for _, f := range onFallback.Items {
		if slices.Contains(scan.Missing, f.FileID) {
			t.Fatalf("the scan made fallback file %s Missing: %+v", f.FileID, scan)
		}
	}
	var still struct{ Total int }
	if be.call("GET", "/api/v2/recording/disk/fallback-recovery?limit=50", nil, &still); still.Total < onFallback.Total {
		t.Fatalf("after the scan %d files on the fallback, %d before", still.Total, onFallback.Total)
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/fallback-recovery/preview", map[string]any{"mediaServerId": "media-1"}, nil); st != 200 ||
		!strings.Contains(string(body), `"Blocked"`) {
		t.Fatalf("preview while the primary is swapped: %d %s", st, body)
	}

	if err := unix.Unmount(root, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	mounted = false
	be.call("GET", "/api/v2/recording/files?streamId=fb&pageSize=100", nil, &files)
	during := files.Total
	testkit.Eventually(t, 30*time.Second, "recording back on the primary", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=fb&pageSize=100", nil, &files)
		be.call("GET", "/api/v2/recording/disk/fallback-recovery?limit=50", nil, &onFallback)
		return files.Total >= during+2 && len(onFallback.Items) == onFallback.Total && newestOnPrimary(files.Rows, onFallback.Items)
	})

	var rescan scanResult
	if st, body := be.call("POST", "/api/v2/recording/files/scan", map[string]any{"mediaServerId": "media-1", "streamId": "fb"}, &rescan); st != 200 ||
		rescan.MissingCount != 0 || rescan.RecoveredCount != scan.MissingCount || rescan.RelocatedCount != 0 {
		t.Fatalf("scan with the primary back: %d %s (before: %+v)", st, body, scan)
	}
	type recoveryResult struct {
		MediaServerID, NodeID, PrimaryState string
		DryRun                              bool
		Moved                               int
		Items                               []struct{ FileID, Result, Detail string }
	}
	ids := make([]string, 0, len(onFallback.Items))
	for _, f := range onFallback.Items {
		ids = append(ids, f.FileID)
	}
	var preview recoveryResult
	if st, body := be.call("POST", "/api/v2/recording/disk/fallback-recovery/preview", map[string]any{"mediaServerId": "media-1", "fileIds": ids},
		&preview); st != 200 || !preview.DryRun || preview.PrimaryState != "Verified" || preview.Moved != 0 || len(preview.Items) != len(ids) {
		t.Fatalf("preview: %d %s", st, body)
	}
	for _, it := range preview.Items {
		if it.Result != "WouldMove" {
			t.Fatalf("preview item: %+v", it)
		}
	}
	// Refusals: no media server, a foreign or unknown id, a repeated id,
	// and the permissions.
	for _, bad := range []map[string]any{{}, {"mediaServerId": "media-1", "fileIds": []string{ids[0], ids[0]}},
		{"mediaServerId": "media-2", "fileIds": ids[:1]}, {"mediaServerId": "media-1", "fileIds": []string{"01a20000-0000-7000-8000-000000000000"}}} {
		if st, body := be.call("POST", "/api/v2/recording/disk/fallback-recovery/run", bad, nil); st != 400 && st != 404 {
			t.Fatalf("run with %v: %d %s", bad, st, body)
		}
	}
	if st, body := viewer.call("POST", "/api/v2/recording/disk/fallback-recovery/run", map[string]any{"mediaServerId": "media-1"}, nil); st != 403 {
		t.Fatalf("run without recordings.manage: %d %s", st, body)
	}
	outsider := backend{t: t, api: cp.api, token: cp.newToken("channels.view")}
	if st, body := outsider.call("GET", "/api/v2/recording/disk/fallback-recovery", nil, nil); st != 403 {
		t.Fatalf("list without recordings.view: %d %s", st, body)
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/fallback-recovery?limit=0", nil, nil); st != 400 {
		t.Fatalf("limit 0: %d %s", st, body)
	}

	var run recoveryResult
	if st, body := be.call("POST", "/api/v2/recording/disk/fallback-recovery/run", map[string]any{"mediaServerId": "media-1"}, &run); st != 200 ||
		run.DryRun || run.Moved != len(ids) {
		t.Fatalf("run: %d %s", st, body)
	}
	be.call("GET", "/api/v2/recording/disk/fallback-recovery", nil, &onFallback)
	if onFallback.Total != 0 {
		t.Fatalf("after the run %d files are still listed on the fallback", onFallback.Total)
	}
	if _, err := os.Stat(found); !os.IsNotExist(err) {
		t.Fatalf("the fallback copy is still there: %v", err)
	}
	var again recoveryResult
	if st, body := be.call("POST", "/api/v2/recording/disk/fallback-recovery/run", map[string]any{"mediaServerId": "media-1", "fileIds": ids[:1]},
		&again); st != 200 || again.Moved != 0 || len(again.Items) != 1 || again.Items[0].Result != "OnPrimary" {
		t.Fatalf("a second run: %d %s", st, body)
	}

	// The recovered file lies under the primary root and plays by its id.
	var moved string
	filepath.WalkDir(root, func(p string, d os.DirEntry, _ error) error {
		if d != nil && d.Name() == fb.FileName {
			moved = p
		}
		return nil
	})
	if moved == "" {
		t.Fatalf("%s is not under the primary root %s", fb.FileName, root)
	}
	st, _, body := get(t, cp.api+"/api/v2/recording/files/"+fb.FileID+"/media", cp.newToken("recordings.play"))
	if st != 200 || int64(len(body)) != fb.FileSize {
		t.Fatalf("media of the recovered file: %d, %d bytes of %d", st, len(body), fb.FileSize)
	}
	played := filepath.Join(t.TempDir(), fb.FileName)
	if err := os.WriteFile(played, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if p := probeFile(t, played); p.videoCodec != "h264" || p.videoFrames < 25 {
		t.Fatalf("the recovered file plays as %+v", p)
	}
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
}

// newestOnPrimary says the newest indexed file is not one on the
// fallback: recording went back to the primary root.
func newestOnPrimary(rows []recordingFile, onFallback []fallbackFile) bool {
	if len(rows) == 0 {
		return false
	}
	newest := rows[len(rows)-1].FileID
	for _, f := range onFallback {
		if f.FileID == newest {
			return false
		}
	}
	return true
}

// fallbackFile is an item of GET /api/v2/recording/disk/fallback-recovery.
type fallbackFile struct {
	FileID, MediaServerID, StreamID, FileName, FileState string
	FileSize                                             int64
}
