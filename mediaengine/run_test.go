package mediaengine

import (
	"net/http"
	"os"
	"testing"

	"github.com/svcplatform/svc/shared/engineapi"
)

func TestControlAPIHealthAndReload(t *testing.T) {
	te := startEngine(t, nil)
	var h engineapi.Health
	if st := te.control(t, "GET", engineapi.PathHealth, nil, &h); st != http.StatusOK || h.Status != "ok" || h.MediaServerID != "n1" || h.PID != os.Getpid() {
		t.Fatalf("health = %d %+v", st, h)
	}
	var res engineapi.ConfigResult
	if st := te.control(t, "POST", engineapi.PathReload, nil, &res); st != http.StatusOK || !res.Applied || len(res.RestartRequired) != 0 {
		t.Fatalf("reload of the unchanged file: %d %+v", st, res)
	}
	os.WriteFile(te.cfgFile, []byte("nodeId: n1\nhls:\n  format: avi\n"), 0o600)
	var e engineapi.Error
	if st := te.control(t, "POST", engineapi.PathReload, nil, &e); st != http.StatusBadRequest || e.Code != engineapi.CodeInvalidConfig {
		t.Fatalf("reload of a bad file: %d %+v, want 400", st, e)
	}
	if st := te.control(t, "GET", engineapi.PathHealth, nil, &h); st != http.StatusOK {
		t.Fatalf("engine stopped serving after a refused reload: %d", st)
	}
}
