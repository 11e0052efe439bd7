package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181LiveInviteOverTCPAndStopWithoutReinvite: the contract's
// live/invite starts a SIPp camera's channel over TCP (the offer says
// TCP/RTP/AVP, the media sender dials the engine's port with RFC 4571
// framing) and the stream goes Online; the channel is then made an
// auto-pull channel, and live/stop pauses auto-recovery before the stop
// (contract B, third-party rule 5): the camera sees the BYE and no second
// INVITE follows, even after a change of the channel's record, which
// starts an auto-pull channel that is not paused again.
func TestGB28181LiveInviteOverTCPAndStopWithoutReinvite(t *testing.T) {
	const (
		deviceID  = "34020000001320000003"
		channelID = "34020000001310000003"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_answer.xml", deviceID, channelID, platform, domain)
	var ch struct{ ChannelID, Stream string }
	testkit.Eventually(t, 60*time.Second, "the camera's channel in the catalogue", func() bool {
		var list struct {
			Total int
			Rows  []struct{ ChannelID, Stream string }
		}
		cp.call("GET", "/api/v2/channels?deviceId="+deviceID, nil, &list)
		if list.Total == 1 {
			ch = list.Rows[0]
		}
		return list.Total == 1
	})
	control := backend{t: t, api: cp.api, token: cp.newToken("devices.control")}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("streams.view", "channels.view", "channels.manage")}
	body := map[string]any{"deviceId": deviceID, "channelId": channelID, "mediaServerId": "media-1", "rtpWithTcp": true, "timeoutSeconds": 5}
	if st, _ := viewer.call("POST", "/api/v2/gb28181/live/invite", body, nil); st != 403 {
		t.Fatalf("live invite without devices.control: %d", st)
	}
	if st, _ := control.call("POST", "/api/v2/gb28181/live/invite", map[string]any{"deviceId": deviceID, "channelId": "34020000001310000099"}, nil); st != 404 {
		t.Fatalf("live invite of an unknown channel: %d", st)
	}
	var started struct {
		Channel struct{ ChannelId, MediaServerId string }
		Command struct{ CommandId string }
	}
	if st, b := control.call("POST", "/api/v2/gb28181/live/invite", body, &started); st != 200 || started.Channel.ChannelId != ch.ChannelID ||
		started.Channel.MediaServerId != "media-1" || started.Command.CommandId == "" {
		t.Fatalf("live invite: %d %s", st, b)
	}
	invites := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "invites.log"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	var f []string
	testkit.Eventually(t, 30*time.Second, "the INVITE at the camera", func() bool {
		f = strings.Fields(invites()[0])
		return len(f) == 3
	})
	if f[2] != "TCP/RTP/AVP" {
		t.Fatalf("rtpWithTcp offered %q", f[2])
	}
	ssrc, _ := strconv.ParseUint(f[1], 10, 32)
	psrtp.Start(t, psrtp.Config{Transport: psrtp.TCPDial, Addr: "127.0.0.1:" + f[0], SSRC: uint32(ssrc)})
	testkit.Eventually(t, 30*time.Second, "the stream Online", func() bool {
		var ss struct{ Total int }
		viewer.call("GET", "/api/v2/third-party/streams?streamId="+ch.Stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	})
	// Now an auto-pull channel.
	if st, b := viewer.call("PUT", "/api/v2/channels/"+ch.ChannelID, map[string]any{"autoVideo": true}, nil); st != 200 {
		t.Fatalf("autoVideo: %d %s", st, b)
	}
	var stopped struct {
		Channel struct {
			DesiredState       string
			AutoRecoveryPaused bool
		}
	}
	if st, b := control.call("POST", "/api/v2/gb28181/live/stop", map[string]any{"deviceId": deviceID, "channelId": channelID}, &stopped); st != 200 ||
		stopped.Channel.DesiredState != "Stopped" || !stopped.Channel.AutoRecoveryPaused {
		t.Fatalf("live stop: %d %s", st, b)
	}
	testkit.Eventually(t, 30*time.Second, "the BYE at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
	// An auto-pull channel that is stopped but not paused is started again
	// by the next change of its record (auto-pull); a paused one is not.
	// Change it once the stop is through, then wait a little longer than
	// the dispatcher's scan and count INVITEs.
	testkit.Eventually(t, 30*time.Second, "the channel Offline", func() bool {
		var c struct{ ActualState string }
		viewer.call("GET", "/api/v2/channels/"+ch.ChannelID, nil, &c)
		return c.ActualState == "Offline"
	})
	if st, b := viewer.call("PUT", "/api/v2/channels/"+ch.ChannelID, map[string]any{"description": "stopped"}, nil); st != 200 {
		t.Fatalf("update after stop: %d %s", st, b)
	}
	time.Sleep(3 * time.Second)
	if n := len(invites()); n != 1 {
		t.Fatalf("%d INVITEs after the stop (want 1):\n%s\nSIPp:\n%s", n, strings.Join(invites(), "\n"), sippLog())
	}
	var c struct {
		DesiredState, ActualState string
		AutoRecoveryPaused        bool
	}
	viewer.call("GET", "/api/v2/channels/"+ch.ChannelID, nil, &c)
	if c.DesiredState != "Stopped" || !c.AutoRecoveryPaused {
		t.Fatalf("channel after stop %+v", c)
	}
}
