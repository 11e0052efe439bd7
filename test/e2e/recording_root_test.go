package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
)

// TestRecordingRootProbeAndValidate: a real media host's engine, through
// its agent, checks candidate recording roots on its host. A fresh
// directory probes valid and writable without a marker, and the probe
// leaves it empty; validate-root writes the identity marker once (bound),
// again answers the same identity; the engine's own root is current and
// unbound until validate-root binds the running engine to it; a
// missing directory and a relative path are not valid (nothing created);
// both operations need recordings.manage. A disk check of the healthy root
// passes every item of the disk-check template.
func TestRecordingRootProbeAndValidate(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) {})
	dataDir := cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage")}
	type probe struct {
		MediaServerID, NodeID, Path, FilesystemID, IdentityID, Problem string
		Exists, Directory, Writable, Bound, Current, Valid             bool
		TotalBytes, FreeBytes                                          int64
	}
	call := func(op, path string) (int, string, probe) {
		var p probe
		st, body := be.call("POST", "/api/v2/recording/disk/"+op, map[string]any{"mediaServerId": "media-1", "path": path}, &p)
		return st, string(body), p
	}
	cand := filepath.Join(dataDir, "new-disk")
	if err := os.Mkdir(cand, 0o755); err != nil {
		t.Fatal(err)
	}
	st, body, p := call("probe-root", cand)
	if st != 200 || !p.Valid || !p.Exists || !p.Directory || !p.Writable || p.Bound || p.Current || p.IdentityID != "" ||
		p.FilesystemID == "" || p.TotalBytes <= 0 || p.FreeBytes <= 0 || p.MediaServerID != "media-1" || p.NodeID != "media-1" || p.Path != cand {
		t.Fatalf("probe of a fresh directory: %d %s", st, body)
	}
	if ents, _ := os.ReadDir(cand); len(ents) != 0 {
		t.Fatalf("probe-root wrote %d entries", len(ents))
	}
	st, body, p = call("validate-root", cand)
	if st != 200 || !p.Valid || !p.Bound || p.IdentityID == "" {
		t.Fatalf("validate-root: %d %s", st, body)
	}
	raw, err := os.ReadFile(filepath.Join(cand, ".svc-disk-identity"))
	var marker struct{ IdentityID string }
	if err != nil || json.Unmarshal(raw, &marker) != nil || marker.IdentityID != p.IdentityID {
		t.Fatalf("the marker after validate-root: %s %v, want %s", raw, err, p.IdentityID)
	}
	bound := p.IdentityID
	if st, body, p = call("validate-root", cand); st != 200 || !p.Valid || p.Bound || p.IdentityID != bound {
		t.Fatalf("validate-root again: %d %s, want %s kept", st, body, bound)
	}
	if st, body, p = call("probe-root", cand); st != 200 || p.IdentityID != bound || p.Bound {
		t.Fatalf("probe of the validated directory: %d %s", st, body)
	}
	var roots struct {
		Items []struct{ Path, IdentityID string }
	}
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 || roots.Items[0].Path == "" {
		t.Fatalf("recording roots: %d %s", st, body)
	}
	if st, body, p = call("probe-root", roots.Items[0].Path); st != 200 || !p.Valid || !p.Current || p.IdentityID != "" || roots.Items[0].IdentityID != "" {
		t.Fatalf("probe of the engine's own root, never validated: %d %s", st, body)
	}
	// Validating the engine's own root binds the running engine to it.
	if st, body, p = call("validate-root", roots.Items[0].Path); st != 200 || !p.Valid || !p.Current || !p.Bound || p.IdentityID == "" {
		t.Fatalf("validate the engine's own root: %d %s", st, body)
	}
	ownID := p.IdentityID
	if st, body := be.call("GET", "/api/v2/recording/disk/roots", nil, &roots); st != 200 || len(roots.Items) != 1 || roots.Items[0].IdentityID != ownID {
		t.Fatalf("recording roots after validation: %d %s", st, body)
	}
	missing := filepath.Join(dataDir, "absent")
	for _, bad := range []string{missing, "relative/dir"} {
		if st, body, p = call("validate-root", bad); st != 200 || p.Valid || p.Bound || p.Problem == "" {
			t.Fatalf("validate-root of %q: %d %s", bad, st, body)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("validate-root created a missing directory")
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/probe-root", map[string]any{"mediaServerId": "media-1"}, nil); st != 400 {
		t.Fatalf("probe-root without a path: %d %s", st, body)
	}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("recordings.view")}
	var template struct {
		Items []struct{ Key, Description string }
	}
	if st, body := viewer.call("GET", "/api/v2/recording/disk-check-template", nil, &template); st != 200 || len(template.Items) != 6 ||
		template.Items[2].Key != "identity-verified" {
		t.Fatalf("disk check template: %d %s", st, body)
	}
	var check struct {
		Items []struct {
			NodeID, Path string
			Passed       bool
			Checks       []struct{ Key, Status string }
		}
	}
	if st, body := be.call("POST", "/api/v2/recording/disk/check", nil, &check); st != 200 || len(check.Items) != 1 || !check.Items[0].Passed ||
		check.Items[0].Path != roots.Items[0].Path || len(check.Items[0].Checks) != 6 || check.Items[0].Checks[5].Status != "Pass" {
		t.Fatalf("disk check: %d %s", st, body)
	}
	var guard struct{ Items []struct{ Writing string } }
	if st, body := be.call("POST", "/api/v2/recording/disk/guard", nil, &guard); st != 200 || len(guard.Items) != 1 || guard.Items[0].Writing != "Active" {
		t.Fatalf("disk guard: %d %s", st, body)
	}
	if st, body := viewer.call("POST", "/api/v2/recording/disk/guard", nil, nil); st != 403 {
		t.Fatalf("disk guard without recordings.manage: %d %s", st, body)
	}
	if st, body := viewer.call("POST", "/api/v2/recording/disk/check", nil, nil); st != 403 {
		t.Fatalf("disk check without recordings.manage: %d %s", st, body)
	}
	for _, op := range []string{"probe-root", "validate-root"} {
		if st, body := viewer.call("POST", "/api/v2/recording/disk/"+op, map[string]any{"mediaServerId": "media-1", "path": cand}, nil); st != 403 {
			t.Fatalf("%s without recordings.manage: %d %s", op, st, body)
		}
	}
}
