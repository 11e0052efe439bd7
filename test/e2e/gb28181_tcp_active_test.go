package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181PlaybackTCPActive: a playback invite with rtpWithTcp and
// tcpActive offers TCP with a=setup:active (the SIPp camera checks it); the
// camera answers with the address its media sender listens on and its own
// SSRC; the media server connects there and the session's stream plays
// over HTTP-FLV (ffprobe); stopping the session sends the BYE.
func TestGB28181PlaybackTCPActive(t *testing.T) {
	const (
		deviceID  = "34020000001320000007"
		channelID = "34020000001310000007"
		domain    = "3402000000"
		platform  = "34020000002000000001"
		camSSRC   = 1000000123
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)
	// The camera's media sender listens (TCP passive on its side) and sends
	// to whoever connects.
	sender := psrtp.Start(t, psrtp.Config{Transport: psrtp.TCPListen, Addr: "127.0.0.1:0", SSRC: camSSRC})
	_, mport, _ := net.SplitHostPort(sender.ListenAddr().String())
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_tcp_active_answer.xml", deviceID, channelID, platform, domain,
		"-key", "mediaport", mport, "-key", "camssrc", strconv.Itoa(camSSRC))
	catalogChannel(t, cp, deviceID)
	control := backend{t: t, api: cp.api, token: cp.newToken("devices.control")}
	player := backend{t: t, api: cp.api, token: cp.newToken("streams.play", "streams.view")}
	day := time.Date(2026, 11, 28, 8, 0, 0, 0, time.Local)
	var inv struct {
		Session struct{ Id, StreamId, State, Transport string }
	}
	body := map[string]any{"deviceId": deviceID, "channelId": channelID, "startTime": day, "endTime": day.Add(time.Hour),
		"rtpWithTcp": true, "tcpActive": true, "timeoutSeconds": 10}
	if st, raw := control.call("POST", "/api/v2/gb28181/playback/invite", body, &inv); st != 200 || inv.Session.State != "Playing" {
		t.Fatalf("playback invite: %d %s\nSIPp:\n%s", st, raw, sippLog())
	}
	testkit.Eventually(t, 30*time.Second, "the playback stream Online", func() bool {
		var ss struct{ Total int }
		player.call("GET", "/api/v2/third-party/streams?streamId="+inv.Session.StreamId+"&state=Online", nil, &ss)
		return ss.Total == 1
	})
	var l lease
	leasePath := "/api/v2/third-party/gb28181/playback-sessions/" + inv.Session.Id + "/playback-lease"
	if st, raw := player.call("POST", leasePath, map[string]any{"leaseSeconds": 60, "protocols": []string{"http-flv"}}, &l); st != 200 || len(l.Sources) != 1 {
		t.Fatalf("session lease: %d %s", st, raw)
	}
	r, err := probe(t, l.Sources[0].URL, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.codec != "h264" || r.width != 320 || r.height != 240 || r.span < 2 || r.packets < 50 {
		t.Fatalf("played %+v", r)
	}
	if sender.Packets() == 0 {
		t.Fatal("the media server never connected to the camera's sender")
	}
	if st, raw := control.call("POST", "/api/v2/gb28181/playback/sessions/"+inv.Session.Id+"/stop", nil, nil); st != 200 {
		t.Fatalf("stop: %d %s", st, raw)
	}
	testkit.Eventually(t, 30*time.Second, "the BYE at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
}
