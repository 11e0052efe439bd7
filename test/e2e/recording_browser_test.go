package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/svc/test/svcbin"
)

// TestRecordingDirectoryBrowser: a real media host's recording roots
// (the primary and a configured fallback) are the browser's entry points;
// listings and new directories stay under them. Traversal strings,
// absolute paths and symlinks leading out (to /etc, or up through ..)
// answer recording_path_outside_root and nothing is made outside; a NUL
// or a hidden name is recording_path_invalid, a missing directory
// recording_path_not_found, a file recording_path_not_directory. A new
// directory is made and checked writable; every operation needs
// recordings.manage.
func TestRecordingDirectoryBrowser(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	fallback := filepath.Join(t.TempDir(), "fallback")
	var applied struct{ Applied, Reloaded bool }
	if st := cp.call("POST", "/api/v2/node/engine/config/apply", map[string]any{"settings": map[string]any{"recording": map[string]any{
		"fallbackRoot": fallback}}, "reason": "e2e fallback root"}, &applied); st != 200 || !applied.Applied {
		t.Fatalf("apply the fallback root: %d %+v", st, applied)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.manage")}
	var diskRoots struct{ Items []struct{ Path string } }
	if st := cp.call("GET", "/api/v2/recording/disk/roots", nil, &diskRoots); st != 200 || len(diskRoots.Items) != 1 {
		t.Fatalf("recording roots: %d %+v", st, diskRoots)
	}
	root := diskRoots.Items[0].Path
	if st, body := be.call("POST", "/api/v2/recording/disk/validate-root", map[string]any{"mediaServerId": "media-1", "path": fallback}, nil); st != 200 {
		t.Fatalf("validate the fallback root: %d %s", st, body)
	}
	if err := os.MkdirAll(filepath.Join(root, "live"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "live", "a.mp4"), []byte("not media"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("../", 4), filepath.Join(root, "live", "up")); err != nil {
		t.Fatal(err)
	}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("recordings.view")}

	var roots struct {
		Items []struct{ MediaServerID, NodeID, Root, Path, State string }
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/roots", nil, &roots); st != 200 || len(roots.Items) != 2 ||
		roots.Items[0].Root != "primary" || roots.Items[0].Path != root || roots.Items[1].Root != "fallback" || roots.Items[1].Path != fallback ||
		roots.Items[1].State != "Verified" || roots.Items[0].MediaServerID != "media-1" {
		t.Fatalf("browser roots: %d %s", st, body)
	}
	type listing struct {
		Root, Path        string
		Created, Writable bool
		Entries           []struct{ Name, Type string }
	}
	var top listing
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/entries", map[string]any{"mediaServerId": "media-1", "path": ""}, &top); st != 200 ||
		len(top.Entries) != 2 || top.Entries[0].Name != "live" || top.Entries[0].Type != "directory" || top.Entries[1].Name != "etc" ||
		top.Entries[1].Type != "symlink" {
		t.Fatalf("the root's entries: %d %s", st, body)
	}
	var live listing
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/entries", map[string]any{"mediaServerId": "media-1", "path": "live/"}, &live); st != 200 ||
		len(live.Entries) != 2 || live.Entries[0].Name != "a.mp4" || live.Entries[1].Name != "up" {
		t.Fatalf("live's entries: %d %s", st, body)
	}
	refuse := func(op string, body map[string]any, status int, code string) {
		t.Helper()
		if st, out := be.call("POST", "/api/v2/recording/disk/browser/"+op, body, nil); st != status || !strings.Contains(string(out), `"`+code+`"`) {
			t.Fatalf("%s %v: %d %s, want %d %s", op, body, st, out, status, code)
		}
	}
	for _, bad := range []string{"..", "../", "../../etc", "live/../..", "/etc", "/", "etc", "etc/ssl", "live/up", "live/up/etc",
		"live/" + strings.Repeat("../", 5) + "etc"} {
		refuse("entries", map[string]any{"mediaServerId": "media-1", "path": bad}, 400, "recording_path_outside_root")
		refuse("directories", map[string]any{"mediaServerId": "media-1", "path": bad + "/svc-escape"}, 400, "recording_path_outside_root")
	}
	if _, err := os.Stat("/etc/svc-escape"); !os.IsNotExist(err) {
		t.Fatalf("a directory was made in /etc: %v", err)
	}
	refuse("entries", map[string]any{"mediaServerId": "media-1", "path": "a\x00b"}, 400, "recording_path_invalid")
	refuse("entries", map[string]any{"mediaServerId": "media-1", "path": "nope"}, 404, "recording_path_not_found")
	refuse("entries", map[string]any{"mediaServerId": "media-1", "path": "live/a.mp4"}, 409, "recording_path_not_directory")
	refuse("entries", map[string]any{"mediaServerId": "media-1", "root": "elsewhere"}, 400, "invalid_body")
	refuse("entries", map[string]any{"mediaServerId": "media-2"}, 404, "not_found")
	refuse("directories", map[string]any{"mediaServerId": "media-1", "path": "live/.hidden"}, 400, "recording_path_invalid")
	refuse("directories", map[string]any{"mediaServerId": "media-1", "path": "missing/parent"}, 404, "recording_path_not_found")

	var made listing
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/directories", map[string]any{"mediaServerId": "media-1", "path": "live/cam-1"},
		&made); st != 200 || !made.Created || !made.Writable {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, err := os.Stat(filepath.Join(root, "live", "cam-1")); err != nil || !st.IsDir() {
		t.Fatalf("the new directory: %v", err)
	}
	var again listing
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/directories", map[string]any{"mediaServerId": "media-1", "path": "live/cam-1"},
		&again); st != 200 || again.Created || !again.Writable {
		t.Fatalf("create again: %d %s", st, body)
	}
	var spare listing
	if st, body := be.call("POST", "/api/v2/recording/disk/browser/directories", map[string]any{"mediaServerId": "media-1", "root": "fallback",
		"path": "spare"}, &spare); st != 200 || !spare.Created {
		t.Fatalf("create on the fallback: %d %s", st, body)
	}
	if _, err := os.Stat(filepath.Join(fallback, "spare")); err != nil {
		t.Fatalf("the directory on the fallback: %v", err)
	}
	for _, op := range []string{"roots", "entries", "directories"} {
		if st, body := viewer.call("POST", "/api/v2/recording/disk/browser/"+op, map[string]any{"mediaServerId": "media-1", "path": "x"}, nil); st != 403 {
			t.Fatalf("%s without recordings.manage: %d %s", op, st, body)
		}
	}
}
