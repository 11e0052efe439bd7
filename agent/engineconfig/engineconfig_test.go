package engineconfig

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

func newFile(t testing.TB, reload func(context.Context) error) *File {
	dir := t.TempDir()
	f := &File{Path: filepath.Join(dir, "engine.yaml"), BackupDir: filepath.Join(dir, "backups"), Reload: reload,
		Managed: func(c *engineapi.Config) {
			c.NodeID, c.ControlSecretFile, c.Hooks.URL = "media-1", "/var/lib/svc-agent/engine/control.secret", "https://cp:8443/agent/v1/engine-hooks"
		}}
	initial := engineapi.Defaults()
	initial.DataDir = dir
	if _, err := f.Ensure(initial); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestEnsureKeepsManagedFields(t *testing.T) {
	f := newFile(t, nil)
	raw, _ := f.Raw()
	// Someone edits a managed field by hand; the next start puts it back
	// and keeps a backup of what was there.
	os.WriteFile(f.Path, []byte(strings.Replace(raw.Content, "https://cp:8443", "https://evil:8443", 1)), 0o600)
	cfg, err := f.Ensure(engineapi.Defaults())
	if err != nil || cfg.Hooks.URL != "https://cp:8443/agent/v1/engine-hooks" {
		t.Fatalf("ensure: %v %+v", err, cfg.Hooks)
	}
	if b, _ := os.ReadDir(f.BackupDir); len(b) != 1 {
		t.Fatalf("backups %d", len(b))
	}
	if fi, _ := os.Stat(f.Path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
}

func TestPlanWritesNothing(t *testing.T) {
	f := newFile(t, nil)
	before, _ := f.Raw()
	cases := []struct {
		name     string
		settings map[string]any
		valid    bool
		changes  int
		restart  bool
	}{
		{"latency setting", map[string]any{"gopCacheMaxFrames": 120}, true, 1, false},
		{"listen address", map[string]any{"httpAddr": "0.0.0.0:9088", "hls": map[string]any{"segments": 7}}, true, 2, true},
		{"managed field", map[string]any{"hooks": map[string]any{"url": "https://elsewhere"}}, false, 0, false},
		{"invalid value", map[string]any{"hls": map[string]any{"format": "mkv"}}, false, 0, false},
		{"unknown key", map[string]any{"turbo": true}, false, 0, false},
		{"reset to default", map[string]any{"logLevel": nil}, true, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := f.PlanPatch(agentapi.ConfigPatch{Settings: c.settings})
			if err != nil {
				t.Fatal(err)
			}
			if p.Valid != c.valid || len(p.Changes) != c.changes || p.RestartRequired != c.restart {
				t.Fatalf("plan %+v", p)
			}
			if c.changes > 0 && !strings.Contains(p.Diff, "@@") {
				t.Fatalf("no diff: %q", p.Diff)
			}
		})
	}
	after, _ := f.Raw()
	if after.Sha256 != before.Sha256 {
		t.Fatal("a plan changed the file")
	}
	if _, err := f.PlanPatch(agentapi.ConfigPatch{Settings: map[string]any{}, ExpectedSha256: "00"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale sha: %v", err)
	}
}

func TestApplyBacksUpReloadsAndRollsBack(t *testing.T) {
	reloads := 0
	refuse := false
	f := newFile(t, func(context.Context) error {
		reloads++
		if refuse {
			refuse = false // the restored file is accepted again
			return errors.New("engine answered invalid_config")
		}
		return nil
	})
	before, _ := f.Raw()
	res, err := f.ApplyPatch(t.Context(), agentapi.ConfigPatch{Settings: map[string]any{"readerQueueFrames": 512}, ExpectedSha256: before.Sha256})
	if err != nil || !res.Applied || !res.Reloaded || res.BackupFile == "" || reloads != 1 {
		t.Fatalf("apply: %+v %v (reloads %d)", res, err, reloads)
	}
	backup, _ := os.ReadFile(res.BackupFile)
	if string(backup) != before.Content {
		t.Fatal("backup is not the previous file")
	}
	cfg, _ := f.Load()
	if cfg.ReaderQueueFrames != 512 {
		t.Fatalf("not written: %d", cfg.ReaderQueueFrames)
	}
	// The engine refuses the next one: the file is restored byte for byte.
	mid, _ := f.Raw()
	refuse = true
	res, err = f.ApplyPatch(t.Context(), agentapi.ConfigPatch{Settings: map[string]any{"readerQueueFrames": 64}})
	if !errors.Is(err, ErrRefused) || !res.RolledBack || res.Applied {
		t.Fatalf("refused apply: %+v %v", res, err)
	}
	if now, _ := f.Raw(); now.Content != mid.Content {
		t.Fatal("rollback did not restore the file")
	}
	// A raw file that does not parse is refused before anything is written.
	if _, err := f.ApplyRaw(t.Context(), agentapi.RawConfigChange{Content: "hls: [\n"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad raw: %v", err)
	}
	if now, _ := f.Raw(); now.Content != mid.Content {
		t.Fatal("a refused raw apply changed the file")
	}
}

func TestCoreSettings(t *testing.T) {
	f := newFile(t, func(context.Context) error { return ErrNotRunning })
	doc, err := f.Core()
	if err != nil || doc.Settings.HLSFormat != "fmp4" || doc.Settings.RTPPortMin != 30000 {
		t.Fatalf("core %+v %v", doc, err)
	}
	var p agentapi.CoreSettingsPatch
	seg, fmtTS := 4, "ts"
	p.Settings.HLSSegmentSeconds, p.Settings.HLSFormat = &seg, &fmtTS
	res, err := f.ApplyCore(t.Context(), p)
	if err != nil || !res.Applied || res.Reloaded || len(res.Changes) != 2 {
		t.Fatalf("core apply %+v %v", res, err)
	}
	doc, _ = f.Core()
	if doc.Settings.HLSSegmentSeconds != 4 || doc.Settings.HLSFormat != "ts" {
		t.Fatalf("after: %+v", doc.Settings)
	}
	if _, err := f.ApplyCore(t.Context(), agentapi.CoreSettingsPatch{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty core patch: %v", err)
	}
}

func TestUnifiedDiff(t *testing.T) {
	d := unifiedDiff("f", "a\nb\nc\nd\n", "a\nB\nc\nd\ne\n")
	for _, want := range []string{"-b\n+B\n", "+e\n", "@@ -1,4 +1,5 @@"} {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d)
		}
	}
	if unifiedDiff("f", "x", "x") != "" {
		t.Fatal("diff of equal texts")
	}
}

// FuzzPlanPatch feeds arbitrary settings objects (they arrive from the API
// through a node command) to the planner: it must not panic, must not
// write, and a plan it calls valid must be a configuration the engine
// accepts with the managed fields untouched.
func FuzzPlanPatch(f *testing.F) {
	f.Add([]byte(`{"gopCacheMaxFrames":120}`))
	f.Add([]byte(`{"hls":{"format":"ts","segments":3}}`))
	f.Add([]byte(`{"hooks":{"url":null}}`))
	f.Add([]byte(`{"rtpPortMin":"x"}`))
	file := newFile(f, nil)
	before, _ := file.Raw()
	f.Fuzz(func(t *testing.T, raw []byte) {
		var settings map[string]any
		if json.Unmarshal(raw, &settings) != nil {
			return
		}
		p, err := file.PlanPatch(agentapi.ConfigPatch{Settings: settings})
		if err != nil {
			t.Fatalf("plan failed instead of reporting: %v", err)
		}
		if p.Valid && p.Changed {
			cfg, err := fromMap(mergePatch(toMap(mustLoad(t, file)), settings))
			if err != nil || cfg.Validate() != nil || managedDiff(mustLoad(t, file), cfg) != "" {
				t.Fatalf("valid plan for an unusable configuration: %v", err)
			}
		}
		if now, _ := file.Raw(); now.Sha256 != before.Sha256 {
			t.Fatal("a plan wrote the file")
		}
	})
}

func mustLoad(t *testing.T, f *File) engineapi.Config {
	c, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFallbackRootNestedRefused: a recording.fallbackRoot inside the
// recording root (<dataDir>/record here) or around it is refused by the
// plan and by the apply, as ErrFallbackOverlap, and the file is left as
// it was; a sibling directory is taken. A raw file with one is refused the
// same way.
func TestFallbackRootNestedRefused(t *testing.T) {
	f := newFile(t, func(context.Context) error { return nil })
	before, _ := f.Raw()
	root := filepath.Join(filepath.Dir(f.Path), "record")
	for _, nested := range []string{filepath.Join(root, "fb"), filepath.Dir(f.Path), root} {
		patch := agentapi.ConfigPatch{Settings: map[string]any{"recording": map[string]any{"fallbackRoot": nested}}}
		if p, err := f.PlanPatch(patch); err != nil || p.Valid || !strings.Contains(p.Message, "overlaps") {
			t.Fatalf("plan %s: %+v %v", nested, p, err)
		}
		if _, err := f.ApplyPatch(context.Background(), patch); !errors.Is(err, engineapi.ErrFallbackOverlap) {
			t.Fatalf("apply %s: %v", nested, err)
		}
		raw := strings.Replace(before.Content, "recording:", "recording:\n    fallbackRoot: "+nested, 1)
		if _, err := f.ApplyRaw(context.Background(), agentapi.RawConfigChange{Content: raw}); !errors.Is(err, engineapi.ErrFallbackOverlap) {
			t.Fatalf("raw apply %s: %v", nested, err)
		}
	}
	if after, _ := f.Raw(); after.Content != before.Content {
		t.Fatal("a refused fallback root changed the file")
	}
	sibling := filepath.Join(filepath.Dir(f.Path), "record-fallback")
	patch := agentapi.ConfigPatch{Settings: map[string]any{"recording": map[string]any{"fallbackRoot": sibling}}}
	if res, err := f.ApplyPatch(context.Background(), patch); err != nil || !res.Applied {
		t.Fatalf("a sibling fallback root: %+v %v", res, err)
	}
}
