// Package chromium is Debian's Chromium as the tests and benchmarks run
// it: headless, with a profile of its own.
package chromium

import (
	"os/exec"
	"strings"
)

// Path is Debian's browser (package chromium).
const Path = "/usr/bin/chromium"

// Args are the arguments of a headless Chromium with its profile in
// userDataDir that opens url; extra flags go before the url.
func Args(userDataDir, url string, extra ...string) []string {
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir=" + userDataDir, "--disable-dev-shm-usage"}
	return append(append(args, extra...), url)
}

// WebRTCFlags let a page use WebRTC on loopback without a person: media
// plays without a gesture, a fake camera and microphone stand in for real
// ones, and host candidates are addresses rather than mDNS names.
var WebRTCFlags = []string{"--autoplay-policy=no-user-gesture-required", "--use-fake-ui-for-media-stream",
	"--use-fake-device-for-media-stream", "--disable-features=WebRtcHideLocalIpsWithMdns"}

// Version is Chromium's version, or "" when it cannot be read.
func Version() string {
	out, err := exec.Command(Path, "--version").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}
