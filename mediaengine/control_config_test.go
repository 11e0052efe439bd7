package mediaengine

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

func TestControlConfig(t *testing.T) {
	te := startEngine(t, func(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" })
	var cfg engineapi.Config
	if st := te.control(t, "GET", engineapi.PathConfig, nil, &cfg); st != 200 || cfg.NodeID != "n1" || cfg.HTTPAddr != te.cfg.HTTPAddr {
		t.Fatalf("get: %d %+v", st, cfg)
	}
	var res engineapi.ConfigResult
	body := map[string]any{"hls": map[string]any{"format": "ts", "segmentDuration": "1s", "segments": 4, "sessionTimeout": "20s"},
		"httpAddr": "127.0.0.1:1", "hooks": map[string]any{"timeout": "2s"}}
	if st := te.control(t, "PUT", engineapi.PathConfig, body, &res); st != 200 || !res.Applied || !slices.Equal(res.RestartRequired, []string{"httpAddr"}) {
		t.Fatalf("put: %d %+v", st, res)
	}
	saved, err := engineapi.Load(te.cfgFile)
	if err != nil || saved.HLS.Format != "ts" || saved.HTTPAddr != "127.0.0.1:1" || saved.Hooks.Timeout.D() != 2*time.Second || saved.NodeID != "n1" {
		t.Fatalf("file after put: %+v, %v", saved, err)
	}
	if te.hlsConfig().Format != "ts" {
		t.Fatal("the HLS format did not apply at once")
	}
	for _, bad := range []any{
		map[string]any{"hls": map[string]any{"format": "avi"}},
		map[string]any{"controlAddr": "0.0.0.0:1"},
		map[string]any{"noSuchField": true},
		"not an object",
	} {
		var e engineapi.Error
		if st := te.control(t, "PUT", engineapi.PathConfig, bad, &e); st != http.StatusBadRequest {
			t.Errorf("put %v: %d %+v, want 400", bad, st, e)
		}
	}
	if after, _ := engineapi.Load(te.cfgFile); after.HLS.Format != "ts" {
		t.Fatal("a refused put changed the file")
	}
}
