package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181HistoryPlaybackEndToEnd: a SIPp camera registers; a record
// query reaches it and its three RecordInfo pages become the query's
// list, whose entries carry playback actions without the camera's file
// paths; the first entry's action INVITEs the camera with s=Playback and
// the entry's range in t=; the test's media sender sends PS over RTP to
// the offered port and SSRC; the session's stream goes Online and a
// third-party playback-session lease plays it over HTTP-FLV (ffprobe);
// then the camera reports the end of the file (MediaStatus 121): the
// platform sends a BYE, the session is Ended and its lease answers 409.
func TestGB28181HistoryPlaybackEndToEnd(t *testing.T) {
	const (
		deviceID  = "34020000001320000002"
		channelID = "34020000001310000002"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_history_answer.xml", deviceID, channelID, platform, domain)

	// Registered: its catalog became a channel.
	catalogChannel(t, cp, deviceID)
	viewer := backend{t: t, api: cp.api, token: cp.newToken("devices.view")}
	control := backend{t: t, api: cp.api, token: cp.newToken("devices.control")}
	player := backend{t: t, api: cp.api, token: cp.newToken("streams.play", "streams.view")}

	// The record query: devices.view creates and reads it.
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.Local)
	queryBody := map[string]any{"deviceId": deviceID, "channelId": channelID, "startTime": day, "endTime": day.Add(24 * time.Hour), "timeoutSeconds": 10}
	if st, _ := player.call("POST", "/api/v2/gb28181/records/query", queryBody, nil); st != 403 {
		t.Fatalf("a record query without devices.view: %d", st)
	}
	var task struct{ TaskId, State string }
	if st, body := viewer.call("POST", "/api/v2/gb28181/records/query", queryBody, &task); st != 200 || task.State != "Running" {
		t.Fatalf("record query: %d %s", st, body)
	}
	type action struct {
		Method, Endpoint string
		Request          map[string]any
	}
	var result struct {
		State   string
		SumNum  int
		Records []struct {
			RecordId           string
			StartTime, EndTime time.Time
			Playback           action
		}
	}
	var raw []byte
	testkit.Eventually(t, 30*time.Second, "the record query complete", func() bool {
		_, raw = viewer.call("GET", "/api/v2/gb28181/records/query/"+task.TaskId, nil, &result)
		return result.State != "" && result.State != "Running"
	})
	if result.State != "Succeeded" || result.SumNum != 3 || len(result.Records) != 3 {
		t.Fatalf("record query result %s\nSIPp:\n%s", raw, sippLog())
	}
	if strings.Contains(string(raw), "/mnt/sd") || strings.Contains(string(raw), "camera-disk") {
		t.Fatalf("the record list shows the camera's locators: %s", raw)
	}
	first := result.Records[0]
	wantStart := time.Date(2026, 11, 28, 8, 0, 0, 0, time.Local)
	if !first.StartTime.Equal(wantStart) || !first.EndTime.Equal(wantStart.Add(time.Hour)) || first.Playback.Method != "POST" ||
		first.Playback.Endpoint != "/api/v2/gb28181/playback/invite" {
		t.Fatalf("first record %+v", first)
	}

	// Playback with the entry's action: devices.control.
	if st, _ := viewer.call(first.Playback.Method, first.Playback.Endpoint, first.Playback.Request, nil); st != 403 {
		t.Fatalf("a playback invite without devices.control: %d", st)
	}
	var inv struct {
		Session struct{ Id, App, StreamId, State, MediaServerId string }
	}
	if st, body := control.call(first.Playback.Method, first.Playback.Endpoint, first.Playback.Request, &inv); st != 200 || inv.Session.State != "Playing" {
		t.Fatalf("playback invite: %d %s\nSIPp:\n%s", st, body, sippLog())
	}
	// The camera got s=Playback with the entry's range.
	var f []string
	testkit.Eventually(t, 10*time.Second, "the playback INVITE at the camera", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "invite.txt"))
		f = strings.Fields(string(b))
		return err == nil && len(f) == 4
	})
	if f[2] != strconv.FormatInt(wantStart.Unix(), 10) || f[3] != strconv.FormatInt(wantStart.Add(time.Hour).Unix(), 10) {
		t.Fatalf("t= %s %s, want %d %d", f[2], f[3], wantStart.Unix(), wantStart.Add(time.Hour).Unix())
	}
	port, _ := strconv.Atoi(f[0])
	ssrc, _ := strconv.ParseUint(f[1], 10, 32)
	if ssrc/1_000_000_000 != 1 {
		t.Fatalf("a playback SSRC starts with 1: %d", ssrc)
	}
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: uint32(ssrc)})
	testkit.Eventually(t, 30*time.Second, "the playback stream Online", func() bool {
		var ss struct{ Total int }
		player.call("GET", "/api/v2/third-party/streams?streamId="+inv.Session.StreamId+"&state=Online", nil, &ss)
		return ss.Total == 1
	})
	leasePath := "/api/v2/third-party/gb28181/playback-sessions/" + inv.Session.Id + "/playback-lease"
	if st, _ := control.call("POST", leasePath, map[string]any{"leaseSeconds": 60}, nil); st != 403 {
		t.Fatalf("a session lease without streams.play: %d", st)
	}
	var l lease
	if st, body := player.call("POST", leasePath, map[string]any{"leaseSeconds": 60, "protocols": []string{"http-flv"}}, &l); st != 200 {
		t.Fatalf("session lease: %d %s", st, body)
	}
	if len(l.Sources) != 1 || l.Sources[0].Protocol != "http-flv" {
		t.Fatalf("sources %+v", l.Sources)
	}
	r, err := probe(t, l.Sources[0].URL, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.codec != "h264" || r.width != 320 || r.height != 240 || r.span < 2 || r.packets < 50 {
		t.Fatalf("played %+v", r)
	}

	// The camera reports the end of the file: BYE, Ended, the lease is over.
	testkit.Eventually(t, 40*time.Second, "the BYE at the camera after MediaStatus 121", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
	var sess struct{ State, EndReason string }
	testkit.Eventually(t, 10*time.Second, "the session Ended", func() bool {
		viewer.call("GET", "/api/v2/gb28181/playback/sessions/"+inv.Session.Id, nil, &sess)
		return sess.State == "Ended"
	})
	if !strings.Contains(sess.EndReason, "121") {
		t.Fatalf("end reason %q", sess.EndReason)
	}
	if st, body := player.call("POST", "/api/v2/third-party/playback-leases/"+l.LeaseID+"/renew", map[string]any{}, nil); st != 409 ||
		!strings.Contains(string(body), "playback_lease_conflict") {
		t.Fatalf("renewing the ended session's lease: %d %s", st, body)
	}
	if st, body := player.call("POST", leasePath, map[string]any{"leaseSeconds": 60}, nil); st != 409 {
		t.Fatalf("a lease on the ended session: %d %s", st, body)
	}
	if st, _ := control.call("POST", "/api/v2/gb28181/playback/sessions/"+inv.Session.Id+"/stop", nil, nil); st != 409 {
		t.Fatalf("stopping the ended session: %d", st)
	}
	if st, _ := viewer.call("GET", "/api/v2/gb28181/records/query/01a2262f-0daa-7e97-be48-881943e5b435", nil, nil); st != 404 {
		t.Fatalf("an unknown record query: %d", st)
	}
}

// startGBPlatform starts a control node whose SIP server (on a free UDP
// and TCP port, returned) takes devices of domain with the password
// camera-pass as platform, and a media host media-1 for their streams;
// tune adjusts the control node's configuration.
func startGBPlatform(t *testing.T, domain, platform string, tune ...func(*config.Config)) (*controlNode, string) {
	t.Helper()
	bin := svcbin.Build(t)
	pw := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(pw, []byte("camera-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	sipAddr := freeUDPAddr(t)
	cp := startControlNode(t, func(c *config.Config) {
		c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain, c.GB28181ID = pw, sipAddr, domain, platform
		for _, f := range tune {
			f(c)
		}
	})
	cp.startMediaHost(bin, "media-1")
	return cp, sipAddr
}

// catalogChannel waits until the camera deviceID registered and its
// one-channel catalog became a channel, and answers that channel's id.
func catalogChannel(t *testing.T, cp *controlNode, deviceID string) string {
	t.Helper()
	var chID string
	testkit.Eventually(t, 60*time.Second, "the camera registered and its catalog synced", func() bool {
		var list struct {
			Total int
			Rows  []struct{ ChannelID string }
		}
		cp.call("GET", "/api/v2/channels?deviceId="+deviceID, nil, &list)
		if list.Total == 1 {
			chID = list.Rows[0].ChannelID
		}
		return list.Total == 1
	})
	return chID
}

// startSIPpCamera runs gb28181_device.xml (register, catalog of one
// channel, keep-alives) with the out-of-call scenario ooc answering the
// platform (extra are more SIPp arguments); it returns SIPp's working
// directory and a reader of its message log.
func startSIPpCamera(t *testing.T, sipAddr, ooc, deviceID, channelID, platform, domain string, extra ...string) (string, func() string) {
	t.Helper()
	sipp, err := exec.LookPath("sipp")
	if err != nil {
		t.Fatalf("sipp is required (Debian package sip-tester; scripts/install-deps.sh test installs it): %v", err)
	}
	wd, _ := os.Getwd()
	dir := t.TempDir()
	args := append([]string{"-sf", filepath.Join(wd, "testdata", "gb28181_device.xml"), "-oocsf", filepath.Join(wd, "testdata", ooc),
		"-m", "1", "-t", "u1", "-i", "127.0.0.1", "-p", strconv.Itoa(freeUDPPort(t)), "-key", "device", deviceID, "-key", "channel", channelID,
		"-key", "platform", platform, "-key", "domain", domain, "-au", deviceID, "-ap", "camera-pass", "-nostdin", "-timeout", "600s",
		"-trace_msg", "-message_file", filepath.Join(dir, "messages.log")}, extra...)
	cmd := exec.Command(sipp, append(args, sipAddr)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return dir, func() string { b, _ := os.ReadFile(filepath.Join(dir, "messages.log")); return tail(string(b), 80) }
}
