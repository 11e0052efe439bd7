package mediaengine

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/engineapi"
)

// TestHLSViewerSessions checks that an HLS viewer (svc_viewer) keeps one
// session across master playlist reloads, that viewers are listed as
// players, and that a kicked viewer's session is gone.
func TestHLSViewerSessions(t *testing.T) {
	te := startEngine(t, nil)
	master := func(query string) string {
		resp, err := http.Get(te.mediaURL("/live/demo/hls.m3u8?" + query))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("master playlist: %d %v", resp.StatusCode, resp.Header)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "hls/") {
				return line
			}
		}
		t.Fatalf("no media playlist in %s", b)
		return ""
	}
	a1 := master("svc_viewer=a&svc_ticket=T")
	a2 := master("svc_viewer=a&svc_ticket=T")
	b := master("svc_viewer=b&svc_ticket=T")
	if a1 != a2 || a1 == b {
		t.Fatalf("sessions: a %q then %q, b %q", a1, a2, b)
	}
	var list engineapi.PlayerList
	te.control(t, "GET", engineapi.PathPlayers+"?protocol=hls", nil, &list)
	if len(list.Players) != 2 || list.Players[0].Viewer != "a" || list.Players[1].Viewer != "b" {
		t.Fatalf("hls players %+v", list.Players)
	}
	resp, err := http.Get(te.mediaURL("/live/demo/" + a1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "#EXT-X-MAP") || !strings.Contains(string(body), ".m4s") {
		t.Fatalf("media playlist %d:\n%s", resp.StatusCode, body)
	}
	var res engineapi.KickResult
	te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{PlayerID: list.Players[0].ID}, &res)
	resp, err = http.Get(te.mediaURL("/live/demo/" + a1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res.Kicked != 1 || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after kicking viewer a: kicked %d, playlist %d", res.Kicked, resp.StatusCode)
	}
}
