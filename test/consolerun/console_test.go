package consolerun

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestConsoleInABrowser is issue 20's "must hold": Playwright drives
// Debian's Chromium through the console of a real `svc dev` (see
// console/e2e): sign in, the dev media host online, an RTSP channel on a
// GStreamer camera started and watched (video time advancing, a frame that
// is not black) in every protocol and a wall, an API token shown once, a
// delivery plan whose test delivery reaches this test's receiver with a
// valid signature, the demo channel recorded and a file of it played on
// the Recordings page with a cut/merge of the range, the devices and rooms
// pages, sign out; then a viewer who sees no control it may not
// use and gets no 403; axe on every page; CSRF, cookies and CSP checked
// from the browser.
func TestConsoleInABrowser(t *testing.T) {
	bin := svcbin.Build(t)
	// The whole browser run takes about 2 minutes on an idle 2-core machine
	// and up to 4.5 under a load average of 20; the bound only stops a hung
	// browser.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	shots := os.Getenv("SVC_CONSOLE_SCREENSHOTS")
	cam := testkit.StartCamera(t, "cam", "camPa55word", "digest")
	res, err := Run(ctx, Options{Bin: bin, Mode: "full", Screenshots: shots, Log: testWriter{t}, Camera: cam})
	if err != nil {
		if res != nil {
			t.Logf("svc dev output:\n%s", tail(res.Platform, 6000))
		}
		t.Fatal(err)
	}
	var test, bad int
	for _, d := range res.Received {
		if !d.SignatureValid {
			bad++
		}
		if d.Event == "system.webhook.test" && d.SignatureValid {
			test++
		}
	}
	if test == 0 || bad > 0 {
		t.Fatalf("the receiver got %d signed test deliveries and %d with a bad signature: %+v", test, bad, res.Received)
	}
	if len(res.Viewer) < 8 {
		t.Fatalf("the viewer saw only %v", res.Viewer)
	}
	t.Logf("%s, %d s; viewer pages %s; figures %v", res.Browser, res.Seconds, strings.Join(res.Viewer, ", "), res.Figures)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
