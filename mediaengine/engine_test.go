package mediaengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/shared/engineapi"
)

const testSecret = "s3cret"

// testEngine is an engine started by a test with the demo clip playing at
// live/demo.
type testEngine struct {
	*Engine
	cfg     engineapi.Config
	cfgFile string
}

func startEngine(t *testing.T, mutate func(*engineapi.Config)) *testEngine {
	t.Helper()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600)
	// The engine's TCP listeners bind port 0 and the tests ask the engine
	// which ports it got. Its RTP range cannot: the first pair of a random
	// range serves RTSP over UDP, and a test of another package may bind it
	// first, so a start that finds it taken tries another range.
	for attempt := 1; ; attempt++ {
		cfg := engineapi.Defaults()
		cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "n1", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", secretFile
		cfg.RTPPortMin = 20000 + 2*rand.IntN(3000)
		cfg.RTPPortMax = cfg.RTPPortMin + 99
		cfg.DataDir, cfg.LogLevel = dir, "debug"
		cfg.WebRTC.UDPAddr, cfg.WebRTC.TCPAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.DemoFile, cfg.DemoPath = "builtin", "live/demo"
		if mutate != nil {
			mutate(&cfg)
		}
		cfgFile := filepath.Join(dir, "engine.yaml")
		b, _ := cfg.Marshal()
		os.WriteFile(cfgFile, b, 0o600)
		parsed, err := engineapi.Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Start(context.Background(), cfgFile, parsed, zaptest.NewLogger(t))
		if err != nil && attempt < 3 && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")) {
			t.Logf("the RTP range's first pair was taken meanwhile, trying another range: %v", err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return &testEngine{Engine: e, cfg: parsed, cfgFile: cfgFile}
	}
}

func (te *testEngine) mediaURL(path string) string { return "http://" + te.MediaAddr().String() + path }

// control calls the control API with the secret and decodes the answer
// into out (when not nil), returning the status.
func (te *testEngine) control(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+te.ControlAddr().String()+path, rd)
	req.Header.Set("Authorization", "Bearer "+testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decoding the answer (status %d): %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}
