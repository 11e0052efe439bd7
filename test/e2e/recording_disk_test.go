package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

type diskState struct {
	NodeID, MediaServerID, State, FilesystemID, Error  string
	TotalBytes, FreeBytes, LowSpaceBytes, RefusedFiles int64
	Retention                                          bool
	PrunedFiles                                        int
}

// TestRecordingDiskStatesAndRetention: a real media host reports its
// recording volume (Normal with no watermarks, the filesystem's identity
// and size) in GET /api/v2/recording/disk/states, behind recordings.view.
// Recording an ffmpeg push in 2 s files, the engine's configuration gets
// a low watermark above the disk's free space with retention (applied
// through the agent, without a restart): the volume turns LowSpace, the
// engine deletes its finished files as new ones start, never refusing
// one, and the control plane marks the pruned files Deleted (a restore
// answers that the bytes are gone) while recording goes on.
func TestRecordingDiskStatesAndRetention(t *testing.T) {
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
	other := backend{t: t, api: cp.api, token: cp.newToken("channels.view")}
	var states struct {
		Items []diskState
	}
	if st, body := other.call("GET", "/api/v2/recording/disk/states", nil, nil); st != 403 {
		t.Fatalf("disk states without recordings.view: %d %s", st, body)
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/states", nil, &states); st != 200 || len(states.Items) != 1 {
		t.Fatalf("disk states: %d %s", st, body)
	}
	if d := states.Items[0]; d.NodeID != "media-1" || d.MediaServerID != "media-1" || d.State != "Normal" || d.FilesystemID == "" ||
		d.TotalBytes <= 0 || d.FreeBytes <= 0 || d.FreeBytes > d.TotalBytes || d.Retention || d.Error != "" {
		t.Fatalf("a volume without watermarks: %+v", d)
	}

	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "disk",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/disk", 16)
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 30*time.Second, "two recorded files", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=disk&fileState=Completed", nil, &files)
		return files.Total >= 2
	})
	// A low watermark no disk reaches: every finished, reported file is
	// pruned when the next one starts.
	var applied struct{ Applied, Reloaded bool }
	if st := cp.call("POST", "/api/v2/node/engine/config/apply", map[string]any{"settings": map[string]any{"recording": map[string]any{
		"lowSpaceBytes": int64(1e15), "retention": true}}, "reason": "e2e retention"}, &applied); st != 200 || !applied.Applied || !applied.Reloaded {
		t.Fatalf("apply watermarks: %d %+v", st, applied)
	}
	var deleted struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 30*time.Second, "pruned files marked Deleted", func() bool {
		be.call("GET", "/api/v2/recording/disk/states", nil, &states)
		be.call("GET", "/api/v2/recording/files?streamId=disk&fileState=Deleted", nil, &deleted)
		return len(states.Items) == 1 && states.Items[0].State == "LowSpace" && states.Items[0].PrunedFiles >= 2 && deleted.Total >= 2
	})
	if d := states.Items[0]; !d.Retention || d.LowSpaceBytes != 1e15 || d.RefusedFiles != 0 {
		t.Fatalf("a LowSpace volume with retention: %+v", d)
	}
	var restored struct {
		Results []struct {
			Success bool
			Code    string
		}
	}
	if st, body := be.call("POST", "/api/v2/recording/files/restore", map[string]any{"fileIds": []string{deleted.Rows[0].FileID}}, &restored); st != 200 ||
		len(restored.Results) != 1 || restored.Results[0].Success {
		t.Fatalf("restore of a pruned file: %d %s", st, body)
	}
	var status struct {
		Recordings []struct{ Stream, State string }
		Volume     *struct {
			State         string
			PrunedFileIds []string
			Refused       int64
		}
	}
	testkit.Eventually(t, 10*time.Second, "the engine still recording", func() bool {
		cp.call("GET", "/api/v2/engine/nodes/media-1/recording-status?streamId=disk", nil, &status)
		return len(status.Recordings) == 1 && status.Recordings[0].State == "recording"
	})
	if status.Volume == nil || status.Volume.State != "LowSpace" || len(status.Volume.PrunedFileIds) < 2 || status.Volume.Refused != 0 {
		t.Fatalf("recording status volume: %+v", status.Volume)
	}
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
}

// TestRecordingRetentionByAge: a media host recording an ffmpeg push in
// 2 s files gets recording.maxAge 5s through the agent (no restart): its
// engine's sweep deletes finished files once they are 5 s old, and the
// leader's disk sweep (every second here) marks them Deleted without
// anyone reading the disk states; the young files stay Completed, the
// file being written is never touched and recording goes on.
func TestRecordingRetentionByAge(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) { c.RecordingDiskSweepInterval = time.Second })
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
	var applied struct{ Applied, Reloaded bool }
	if st := cp.call("POST", "/api/v2/node/engine/config/apply", map[string]any{"settings": map[string]any{"recording": map[string]any{
		"maxAge": "5s"}}, "reason": "e2e retention by age"}, &applied); st != 200 || !applied.Applied || !applied.Reloaded {
		t.Fatalf("apply maxAge: %d %+v", st, applied)
	}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "aged",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/aged", 20)
	var deleted, completed struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 60*time.Second, "expired files marked Deleted by the leader's sweep", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=aged&fileState=Deleted", nil, &deleted)
		return deleted.Total >= 2
	})
	now := time.Now()
	for _, f := range deleted.Rows {
		// The engine deletes a file 5 s after it finished, checking every
		// 1.25 s; the index learns it within the sweep's second.
		if f.EndTime.Add(5 * time.Second).After(now) {
			t.Fatalf("%s ended at %s, deleted before it was 5 s old (now %s)", f.FileID, f.EndTime, now)
		}
	}
	be.call("GET", "/api/v2/recording/files?streamId=aged&fileState=Completed", nil, &completed)
	for _, f := range completed.Rows {
		if f.EndTime.Add(20 * time.Second).Before(now) {
			t.Fatalf("%s ended at %s and is still Completed at %s", f.FileID, f.EndTime, now)
		}
	}
	var status struct {
		Recordings []struct{ Stream, State, FileID string }
		Volume     *struct{ MaxAgeSeconds int64 }
	}
	cp.call("GET", "/api/v2/engine/nodes/media-1/recording-status?streamId=aged", nil, &status)
	if len(status.Recordings) != 1 || status.Recordings[0].State != "recording" || status.Volume == nil || status.Volume.MaxAgeSeconds != 5 {
		t.Fatalf("recording status: %+v %+v", status.Recordings, status.Volume)
	}
	var states struct {
		Items []struct {
			State         string
			MaxAgeSeconds int64
		}
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/states", nil, &states); st != 200 || len(states.Items) != 1 || states.Items[0].MaxAgeSeconds != 5 {
		t.Fatalf("disk states: %d %s", st, body)
	}
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
}

// TestRecordingDiskSwap: a real media host starts with a recording root
// nobody validated: the disk states say Unbound (it records, no marker was
// written) and the disk check fails identity-verified while the guard
// stays Active. POST /api/v2/recording/disk/validate-root writes the
// identity marker and binds the running engine's root to it (Verified,
// Normal; validating again keeps the identity). Recording an ffmpeg push
// in 2 s files, another filesystem (a tmpfs) mounted over the root is a
// swapped disk: the disk states show Mismatch with the bound identity (so
// do GET /api/v2/recording/disk/roots, which also names the root
// directory, and GET /api/v2/recording/disk/identities), validate-root
// refuses to bind the swapped disk, the engine refuses new files there
// without failing (disk check: identity-verified fails; guard: Paused),
// and once the tmpfs is gone the root is Normal again (guard: Active) and
// recording goes on into new files.
func TestRecordingDiskSwap(t *testing.T) {
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
	type identityState struct {
		State, IdentityID, BoundFilesystemID, FoundIdentityID, IdentityState, FilesystemID string
		RefusedFiles                                                                       int64
	}
	var states struct{ Items []identityState }
	if st, body := be.call("GET", "/api/v2/recording/disk/states", nil, &states); st != 200 || len(states.Items) != 1 ||
		states.Items[0].State != "Normal" || states.Items[0].IdentityState != "Unbound" || states.Items[0].IdentityID != "" {
		t.Fatalf("disk states of a root never validated: %d %s", st, body)
	}
	type rootEntry struct{ NodeID, Path, State, IdentityID, IdentityState, FilesystemID string }
	var roots struct{ Items []rootEntry }
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 || roots.Items[0].Path == "" ||
		roots.Items[0].IdentityState != "Unbound" {
		t.Fatalf("recording roots: %d %s", st, body)
	}
	root := roots.Items[0].Path
	if _, err := os.Stat(filepath.Join(root, ".svc-disk-identity")); !os.IsNotExist(err) {
		t.Fatalf("the engine wrote an identity marker by itself: %v", err)
	}
	var check struct {
		Items []struct {
			Passed bool
			Checks []struct{ Key, Status, Detail string }
		}
	}
	var guard struct {
		Items []struct{ Writing, State string }
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/guard", nil, &guard); st != 200 || len(guard.Items) != 1 || guard.Items[0].Writing != "Active" {
		t.Fatalf("disk guard on an unbound root: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/check", nil, &check); st != 200 || len(check.Items) != 1 || check.Items[0].Passed ||
		check.Items[0].Checks[2].Key != "identity-verified" || check.Items[0].Checks[2].Status != "Fail" ||
		!strings.Contains(check.Items[0].Checks[2].Detail, "validate-root") {
		t.Fatalf("disk check of an unbound root: %d %s", st, body)
	}
	type probe struct {
		Valid, Bound, Current             bool
		IdentityID, Problem, FilesystemID string
	}
	var bind probe
	if st, body := be.call("POST", "/api/v2/recording/disk/validate-root", map[string]any{"mediaServerId": "media-1", "path": root}, &bind); st != 200 ||
		!bind.Valid || !bind.Bound || !bind.Current || bind.IdentityID == "" {
		t.Fatalf("validate the root: %d %s", st, body)
	}
	bound := bind.IdentityID
	var again probe
	if st, body := be.call("POST", "/api/v2/recording/disk/validate-root", map[string]any{"mediaServerId": "media-1", "path": root}, &again); st != 200 ||
		!again.Valid || again.Bound || again.IdentityID != bound {
		t.Fatalf("validate the root again: %d %s", st, body)
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/states", nil, &states); st != 200 || len(states.Items) != 1 ||
		states.Items[0].State != "Normal" || states.Items[0].IdentityState != "Verified" || states.Items[0].IdentityID != bound ||
		states.Items[0].BoundFilesystemID != bind.FilesystemID {
		t.Fatalf("disk states of the validated root: %d %s", st, body)
	}
	if marker, err := os.ReadFile(filepath.Join(root, ".svc-disk-identity")); err != nil || !strings.Contains(string(marker), bound) {
		t.Fatalf("the identity marker in %q: %s %v", root, marker, err)
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 ||
		roots.Items[0] != (rootEntry{NodeID: "media-1", Path: root, State: "Normal", IdentityID: bound, IdentityState: "Verified",
			FilesystemID: states.Items[0].FilesystemID}) {
		t.Fatalf("recording roots: %d %s (root %s)", st, body, root)
	}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "swap",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/swap", 24)
	var files struct{ Total int }
	testkit.Eventually(t, 30*time.Second, "a recorded file", func() bool {
		be.call("GET", "/api/v2/recording/files?streamId=swap", nil, &files)
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
	testkit.Eventually(t, 30*time.Second, "the swap seen, new files refused", func() bool {
		be.call("GET", "/api/v2/recording/disk/states", nil, &states)
		return len(states.Items) == 1 && states.Items[0].State == "Mismatch" && states.Items[0].RefusedFiles > 0
	})
	if d := states.Items[0]; d.IdentityState != "Mismatch" || d.IdentityID != bound || d.FoundIdentityID != "" {
		t.Fatalf("a swapped disk: %+v", d)
	}
	var swapped probe
	if st, body := be.call("POST", "/api/v2/recording/disk/validate-root", map[string]any{"mediaServerId": "media-1", "path": root}, &swapped); st != 200 ||
		swapped.Valid || swapped.Bound || !strings.HasPrefix(swapped.Problem, "Mismatch") {
		t.Fatalf("validate the swapped disk: %d %s", st, body)
	}
	var identities struct {
		Items []struct{ NodeID, IdentityID, IdentityState, FilesystemID string }
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/identities", nil, &identities); st != 200 || len(identities.Items) != 1 ||
		identities.Items[0].NodeID != "media-1" || identities.Items[0].IdentityID != bound || identities.Items[0].IdentityState != "Mismatch" {
		t.Fatalf("disk identities of a swapped disk: %d %s", st, body)
	}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("channels.view")}
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 ||
		roots.Items[0].Path != root || roots.Items[0].State != "Mismatch" || roots.Items[0].IdentityID != bound {
		t.Fatalf("recording roots of a swapped disk: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/check", nil, &check); st != 200 || len(check.Items) != 1 || check.Items[0].Passed ||
		check.Items[0].Checks[2].Key != "identity-verified" || check.Items[0].Checks[2].Status != "Fail" || check.Items[0].Checks[1].Status != "Pass" {
		t.Fatalf("disk check of a swapped disk: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/guard", nil, &guard); st != 200 || len(guard.Items) != 1 ||
		guard.Items[0].Writing != "Paused" || guard.Items[0].State != "Mismatch" {
		t.Fatalf("disk guard on a swapped disk: %d %s", st, body)
	}
	if st, body := viewer.call("GET", "/api/v2/recording/disk/roots", nil, nil); st != 403 {
		t.Fatalf("recording roots without recordings.view: %d %s", st, body)
	}
	if st, body := viewer.call("GET", "/api/v2/recording/disk/identities", nil, nil); st != 403 {
		t.Fatalf("disk identities without recordings.view: %d %s", st, body)
	}
	be.call("GET", "/api/v2/recording/files?streamId=swap", nil, &files)
	during := files.Total
	if err := unix.Unmount(root, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	mounted = false
	testkit.Eventually(t, 30*time.Second, "the bound disk back and recording on", func() bool {
		be.call("GET", "/api/v2/recording/disk/states", nil, &states)
		be.call("GET", "/api/v2/recording/files?streamId=swap", nil, &files)
		return len(states.Items) == 1 && states.Items[0].State == "Normal" && states.Items[0].IdentityState == "Verified" && files.Total > during+1
	})
	if st, body := be.call("POST", "/api/v2/recording/disk/guard", nil, &guard); st != 200 || len(guard.Items) != 1 || guard.Items[0].Writing != "Active" {
		t.Fatalf("disk guard with the bound disk back: %d %s", st, body)
	}
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
}
