package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181LiveEndToEnd: a SIPp camera registers with the control
// node's SIP server and reports one channel; starting the channel leases
// an RTP port on the media host, opens the engine's RTP server and
// INVITEs the camera; the test's media sender (GStreamer's mpegpsmux in
// RTP) sends to the offered port and SSRC; the stream goes Online, plays
// over HTTP-FLV and HLS through a playback lease, and stop sends a BYE the
// camera sees.
func TestGB28181LiveEndToEnd(t *testing.T) {
	const (
		deviceID  = "34020000001320000001"
		channelID = "34020000001310000001"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)

	sipp, err := exec.LookPath("sipp")
	if err != nil {
		t.Fatalf("sipp is required (Debian package sip-tester; scripts/install-deps.sh test installs it): %v", err)
	}
	wd, _ := os.Getwd()
	dir := t.TempDir()
	cmd := exec.Command(sipp, "-sf", filepath.Join(wd, "testdata", "gb28181_device.xml"), "-oocsf", filepath.Join(wd, "testdata", "gb28181_answer.xml"),
		"-m", "1", "-t", "u1", "-i", "127.0.0.1", "-p", strconv.Itoa(freeUDPPort(t)), "-key", "device", deviceID, "-key", "channel", channelID,
		"-key", "platform", platform, "-key", "domain", domain, "-au", deviceID, "-ap", "camera-pass", "-nostdin", "-timeout", "600s",
		"-trace_msg", "-message_file", filepath.Join(dir, "messages.log"), sipAddr)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sippLog := func() string { b, _ := os.ReadFile(filepath.Join(dir, "messages.log")); return tail(string(b), 60) }

	// The catalog becomes a channel record.
	var ch struct{ ChannelID, Name, Stream string }
	testkit.Eventually(t, 60*time.Second, "the camera's channel in the catalogue", func() bool {
		var list struct {
			Total int
			Rows  []struct{ ChannelID, Name, Stream string }
		}
		cp.call("GET", "/api/v2/channels?deviceId="+deviceID, nil, &list)
		if list.Total == 1 {
			ch = list.Rows[0]
		}
		return list.Total == 1
	})
	if ch.Name != "Gate" || ch.Stream != deviceID+"_"+channelID {
		t.Fatalf("channel %+v", ch)
	}
	// The device registry: devices.view reads it, nothing else does.
	viewer := backend{t: t, api: cp.api, token: cp.newToken("devices.view")}
	var dev struct {
		DeviceId, Status, Transport, NodeId string
		Channels                            int
	}
	if st, body := viewer.call("GET", "/api/v2/gb28181/devices/"+deviceID, nil, &dev); st != 200 || dev.Status != "online" ||
		dev.Transport != "udp" || dev.NodeId != "cp1" || dev.Channels != 1 {
		t.Fatalf("device: %d %s", st, body)
	}
	var devs struct{ Total int }
	if st, _ := viewer.call("GET", "/api/v2/gb28181/devices?status=online", nil, &devs); st != 200 || devs.Total != 1 {
		t.Fatalf("devices: %d %+v", st, devs)
	}
	if st, _ := viewer.call("GET", "/api/v2/gb28181/devices/34020000001320000099", nil, nil); st != 404 {
		t.Fatalf("unknown device: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	if st, _ := be.call("GET", "/api/v2/gb28181/devices", nil, nil); st != 403 {
		t.Fatalf("devices without devices.view: %d", st)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	// The INVITE reaches the camera, which writes the offered port and SSRC.
	port, ssrc := liveInviteAtCamera(t, dir)
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	online := func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId="+ch.Stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	}
	for deadline := time.Now().Add(60 * time.Second); !online(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			var logs any
			cp.call("GET", "/api/v2/channels/"+ch.ChannelID+"/runtime-logs?pageSize=50", nil, &logs)
			t.Fatalf("the GB28181 stream did not come Online within 60 s; runtime log %v\nSIPp:\n%s", logs, sippLog())
		}
	}
	var l lease
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"leaseSeconds": 60}, &l); st != 200 {
		t.Fatalf("lease: %d %s", st, body)
	}
	played := 0
	for _, s := range l.Sources {
		if s.Protocol != "http-flv" && s.Protocol != "hls" {
			continue
		}
		r, err := probe(t, s.URL, 5)
		if err != nil {
			t.Fatalf("%s: %v", s.Protocol, err)
		}
		if r.codec != "h264" || r.width != 320 || r.height != 240 || r.span < 3.9 || r.packets < 100 || !r.audio {
			t.Fatalf("%s played %+v", s.Protocol, r)
		}
		played++
	}
	if played != 2 {
		t.Fatalf("sources %+v", l.Sources)
	}
	// PTZ: a DeviceControl with a PTZCmd reaches the camera (left, pan
	// speed 50% = 0x7F: A5 0F 01 02 7F 7F 70 with the zoom speed nibble, sum 0x25).
	// The catalog reports no PTZType: an administrator confirms PTZ first.
	ptz := backend{t: t, api: cp.api, token: cp.newToken("devices.control")}
	if st, body := be.call("PUT", "/api/v2/channels/"+ch.ChannelID+"/ptz/settings", map[string]any{"enabled": true, "confirmedByAdministrator": true}, nil); st != 200 {
		t.Fatalf("ptz settings: %d %s", st, body)
	}
	if st, body := ptz.call("POST", "/api/v2/channels/"+ch.ChannelID+"/ptz", map[string]any{"command": "left", "speed": 50}, nil); st != 200 {
		t.Fatalf("ptz: %d %s", st, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cmds := ptzCmdsAtCamera(dir)
		if slices.Contains(cmds, "A50F01027F7F7025") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PTZCmd at the camera: got %q\nSIPp: %s\n%s", cmds, out.String(), sippLog())
		}
	}
	if st, _ := ptz.call("POST", "/api/v2/channels/"+ch.ChannelID+"/ptz", map[string]any{"command": "sideways"}, nil); st != 400 {
		t.Fatalf("an unknown PTZ command: %d", st)
	}
	// Stop: the camera sees the BYE.
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/stop", nil, nil); st != 200 {
		t.Fatalf("stop: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the BYE at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
}

// freeUDPPort is a port free for UDP and TCP, claimed for the test (testkit.FreePort).
func freeUDPPort(t *testing.T) int { return testkit.FreePort(t) }

func freeUDPAddr(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(freeUDPPort(t)) }

// liveInviteAtCamera waits for the live INVITE a SIPp camera wrote to
// invite.txt in its directory and answers the offered RTP port and SSRC.
func liveInviteAtCamera(t *testing.T, dir string) (port int, ssrc uint32) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, "the INVITE at the camera", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "invite.txt"))
		f := strings.Fields(string(b))
		if err != nil || len(f) != 2 {
			return false
		}
		port, _ = strconv.Atoi(f[0])
		v, _ := strconv.ParseUint(f[1], 10, 32)
		ssrc = uint32(v)
		return port > 0
	})
	return port, ssrc
}
