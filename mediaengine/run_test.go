package mediaengine

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/shared/engineapi"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestControlAPIHealthAndReload(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("s3cret\n"), 0o600)
	cfgFile := filepath.Join(dir, "engine.yaml")
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.ControlAddr, cfg.ControlSecretFile = "n1", freeAddr(t), secretFile
	b, _ := cfg.Marshal()
	os.WriteFile(cfgFile, b, 0o600)
	parsed, err := engineapi.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(context.Background(), cfgFile, parsed, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	call := func(method, path, secret string) *http.Response {
		req, _ := http.NewRequest(method, "http://"+cfg.ControlAddr+path, nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, secret := range []string{"", "wrong"} {
		if r := call("GET", engineapi.PathHealth, secret); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d, want 401", secret, r.StatusCode)
		}
	}
	r := call("GET", engineapi.PathHealth, "s3cret")
	var h engineapi.Health
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil || h.Status != "ok" || h.MediaServerID != "n1" || h.PID != os.Getpid() {
		t.Fatalf("health = %+v, %v", h, err)
	}
	if r := call("POST", engineapi.PathReload, "s3cret"); r.StatusCode != http.StatusOK {
		t.Fatalf("reload of a good file: %d", r.StatusCode)
	}
	os.WriteFile(cfgFile, []byte("nodeId: n1\nhls:\n  format: avi\n"), 0o600)
	if r := call("POST", engineapi.PathReload, "s3cret"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("reload of a bad file: %d, want 400", r.StatusCode)
	}
	if r := call("GET", engineapi.PathHealth, "s3cret"); r.StatusCode != http.StatusOK {
		t.Fatalf("engine stopped serving after a refused reload: %d", r.StatusCode)
	}
}
