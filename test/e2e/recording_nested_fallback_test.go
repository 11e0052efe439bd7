package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestEngineNestedFallbackRoot: `svc engine` started from a configuration
// whose recording.fallbackRoot lies inside its recording root, and one
// whose fallback root holds the recording root, records an ffmpeg push on
// the primary root alone: it logs that the fallback root is ignored, does
// not report one, its files decode in ffprobe, and nothing is written in
// the fallback root outside the primary's own tree (no identity marker, no
// file).
func TestEngineNestedFallbackRoot(t *testing.T) {
	bin := svcbin.Build(t)
	for _, tc := range []struct {
		name           string
		root, fallback string // under the test's directory
	}{
		{"inside", "rec", "rec/fallback"},
		{"around", "fb/rec", "fb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, fallback := filepath.Join(dir, tc.root), filepath.Join(dir, tc.fallback)
			// The operator made both directories.
			for _, d := range []string{root, fallback} {
				if err := os.MkdirAll(d, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			secretFile := filepath.Join(dir, "control-secret")
			if err := os.WriteFile(secretFile, []byte("nested-secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := engineapi.Defaults()
			cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr = "nested-"+tc.name, freeAddr(t), freeAddr(t), freeAddr(t)
			cfg.ControlSecretFile, cfg.DataDir, cfg.LogLevel = secretFile, filepath.Join(dir, "data"), "info"
			cfg.Recording.Root, cfg.Recording.FallbackRoot = root, fallback
			b, err := cfg.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			cfgFile := filepath.Join(dir, "engine.yaml")
			if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
				t.Fatal(err)
			}
			eng := startProcess(t, bin, "engine", "--config", cfgFile)
			call := func(method, path string, body, out any) int {
				var rd bytes.Reader
				if body != nil {
					data, _ := json.Marshal(body)
					rd.Reset(data)
				}
				req, _ := http.NewRequest(method, "http://"+cfg.ControlAddr+path, &rd)
				req.Header.Set("Authorization", "Bearer nested-secret")
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0
				}
				defer resp.Body.Close()
				if out != nil {
					json.NewDecoder(resp.Body).Decode(out)
				}
				return resp.StatusCode
			}
			testkit.Eventually(t, 60*time.Second, "the engine answering", func() bool { return call("GET", engineapi.PathStats, nil, nil) == 200 })
			if st := call("POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "live", Stream: "nested", SegmentSeconds: 2}, nil); st != 200 {
				t.Fatalf("start recording: %d", st)
			}
			if err := pushStream(t, "rtsp://"+cfg.RTSPAddr+"/live/nested", 5).Wait(); err != nil {
				t.Fatalf("ffmpeg push: %v\n%s", err, tail(eng.Out.String(), 2000))
			}
			var list engineapi.RecordingList
			testkit.Eventually(t, 30*time.Second, "the push's files finished", func() bool {
				call("GET", engineapi.PathRecordings, nil, &list)
				return len(list.Recordings) == 1 && list.Recordings[0].State == "waiting" && list.Recordings[0].Files >= 2
			})
			if v := list.Volume; v == nil || v.FallbackRoot != "" {
				t.Fatalf("volume %+v: the ignored fallback root is reported", v)
			}
			if !strings.Contains(eng.Out.String(), "the fallback recording root is ignored") {
				t.Fatalf("no warning about the fallback root in the engine's log:\n%s", tail(eng.Out.String(), 2000))
			}
			var mp4s []string
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, ".mp4") {
					mp4s = append(mp4s, p)
				}
				return nil
			})
			if len(mp4s) != list.Recordings[0].Files {
				t.Fatalf("%d files under the primary root, the engine finished %d", len(mp4s), list.Recordings[0].Files)
			}
			for _, p := range mp4s {
				if pr := probeFile(t, p); pr.videoFrames == 0 || pr.audioFrames == 0 {
					t.Fatalf("%s: %+v", p, pr)
				}
			}
			// Whatever lies in the fallback root is the primary's tree
			// (around) or nothing at all (inside).
			filepath.WalkDir(fallback, func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == fallback {
					return err
				}
				if p == root {
					return filepath.SkipDir
				}
				t.Errorf("written in the fallback root: %s", p)
				return nil
			})
		})
	}
}
