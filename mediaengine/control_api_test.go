package mediaengine

import (
	"net/http"
	"testing"

	"github.com/svcplatform/svc/shared/engineapi"
)

// TestControlAPIRefusesWithoutTheSecret checks every route answers 401
// without the bearer secret or with a wrong one.
func TestControlAPIRefusesWithoutTheSecret(t *testing.T) {
	te := startEngine(t, func(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" })
	routes := [][2]string{
		{"GET", engineapi.PathHealth}, {"POST", engineapi.PathReload}, {"GET", engineapi.PathStreams},
		{"POST", engineapi.PathStreamClose}, {"GET", engineapi.PathPlayers}, {"POST", engineapi.PathPlayersKick},
		{"GET", engineapi.PathProxies}, {"POST", engineapi.PathProxies}, {"DELETE", "/api/v1/proxies/x"},
		{"GET", engineapi.PathConfig}, {"PUT", engineapi.PathConfig}, {"GET", engineapi.PathStats}, {"GET", "/nope"},
	}
	for _, rt := range routes {
		for _, secret := range []string{"", "Bearer wrong", "Basic " + testSecret} {
			req, _ := http.NewRequest(rt[0], "http://"+te.ControlAddr().String()+rt[1], nil)
			if secret != "" {
				req.Header.Set("Authorization", secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with %q: %d, want 401", rt[0], rt[1], secret, resp.StatusCode)
			}
		}
	}
	var e engineapi.Error
	if st := te.control(t, "GET", "/nope", nil, &e); st != http.StatusNotFound || e.Code != engineapi.CodeNotFound {
		t.Fatalf("unknown route with the secret: %d %+v", st, e)
	}
}
