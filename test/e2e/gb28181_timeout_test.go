package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181LiveRTPTimeoutRecovers: a live GB28181 channel whose camera
// stops sending (the test stops its GStreamer sender) is not left Online:
// the engine's RTP server times out (on_rtp_server_timeout), the channel
// goes Retrying, the old dialog gets a BYE and auto-recovery INVITEs the
// camera again. When that INVITE is answered but no media follows, the
// channel goes Retrying again with the RTP timeout as its reason (not
// Starting forever), and a third INVITE whose media arrives brings it
// back Online.
func TestGB28181LiveRTPTimeoutRecovers(t *testing.T) {
	const (
		deviceID  = "34020000001320000006"
		channelID = "34020000001310000006"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	// The RTP servers' timeout is configured (12 s, not the default 15 s):
	// the reason of the media-less attempt names it.
	cp, sipAddr := startGBPlatform(t, domain, platform, func(c *config.Config) { c.GB28181RTPTimeout = 12 * time.Second })
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_answer.xml", deviceID, channelID, platform, domain)
	chID := catalogChannel(t, cp, deviceID)
	type channel struct{ ActualState, ActualStateReason string }
	state := func() channel {
		var c channel
		cp.call("GET", "/api/v2/channels/"+chID, nil, &c)
		return c
	}
	// invite waits for the camera's n-th INVITE and returns its port and SSRC.
	invite := func(n int) (int, uint32) {
		var port int
		var ssrc uint64
		testkit.Eventually(t, 90*time.Second, "INVITE "+strconv.Itoa(n)+" at the camera", func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "invites.log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) < n || lines[0] == "" {
				return false
			}
			f := strings.Fields(lines[n-1])
			if len(f) < 2 {
				return false
			}
			port, _ = strconv.Atoi(f[0])
			ssrc, _ = strconv.ParseUint(f[1], 10, 32)
			return port > 0
		})
		return port, uint32(ssrc)
	}
	online := func(what string) {
		testkit.Eventually(t, 60*time.Second, what, func() bool { return state().ActualState == "Online" })
	}

	if st := cp.call("POST", "/api/v2/third-party/channels/"+chID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d", st)
	}
	port, ssrc := invite(1)
	sender := psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	online("the channel Online")

	// The camera stops sending: after the RTP server's timeout the
	// channel is Retrying, the dialog ends with a BYE and a new INVITE
	// comes.
	sender.Stop()
	testkit.Eventually(t, 60*time.Second, "the channel Retrying after the camera went silent", func() bool { return state().ActualState == "Retrying" })
	testkit.Eventually(t, 30*time.Second, "the BYE of the silent dialog at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
	invite(2)
	// Answered, but no media: Retrying with the RTP timeout as the reason.
	var c channel
	testkit.Eventually(t, 60*time.Second, "Retrying for an INVITE without media", func() bool {
		c = state()
		return c.ActualState == "Retrying" && strings.Contains(c.ActualStateReason, "RTP server timeout")
	})
	if !strings.Contains(c.ActualStateReason, deviceID) || !strings.Contains(c.ActualStateReason, "within 12 s") {
		t.Fatalf("reason %q names no device or not the configured 12 s", c.ActualStateReason)
	}
	port, ssrc = invite(3)
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	online("the channel Online again after the third INVITE")
	b, _ := os.ReadFile(filepath.Join(dir, "invites.log"))
	if n := len(strings.Split(strings.TrimSpace(string(b)), "\n")); n != 3 {
		t.Fatalf("%d INVITEs, want 3:\n%s\n%s", n, b, sippLog())
	}
}
