package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestGB28181SessionsEndWithTheirNodes: three control nodes; a SIPp camera
// registers with a follower (the holder); the media host's agent enrolls
// through the other follower (via), which stays up throughout.
//
// A leader change: a live session started by the leader (its INVITE
// relayed to the holder) plays; leadership moves to via, whose dispatcher
// never saw the start; the stop through via still sends the BYE (the
// camera sees it), closes the engine's RTP server (its port can be bound)
// and releases the RTP port lease, from the replicated records.
//
// A dead holder: a live session, a playback session run by via and one run
// by the holder itself, and a talk session, all with their dialogs on the
// holder; the holder stops. Within the holder timeout the leader ends them
// all: the camera offline, the live channel's start counted as failed with the reason, both
// playback sessions Ended with the reason, the talk session Released with
// the reason (audio refused with it) and the packets it sent counted (the
// node recorded them), no RTP lease active, the RTP servers' ports free and
// no dialog record left.
func TestGB28181SessionsEndWithTheirNodes(t *testing.T) {
	const (
		deviceID  = "34020000001320000009"
		channelID = "34020000001310000009"
		audioID   = "34020000001370000009"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	bin := svcbin.Build(t)
	// Long enough that no session here ends by its RTP timeout.
	g := startGBCluster(t, "gf", "camera-pass", domain, platform, func(c *config.Config) { c.GB28181RTPTimeout = 5 * time.Minute })
	holder, via, ids := g.holder, g.via, g.ids
	media := &controlNode{t: t, s: via.S, api: via.URL}
	media.token = media.newToken("*")
	media.startMediaHost(bin, "media-1")
	cam := startFaultCamera(t, g, media, deviceID, channelID, platform, domain)
	control, view := via.Token("devices.control"), via.Token("devices.view")
	live := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","mediaServerId":"media-1"}`)

	// A leader change between a live session's start and its stop.
	if r := via.Do("POST", "/api/v2/gb28181/live/invite", control, "application/json", live); r.Status != 200 {
		t.Fatalf("live invite: %d %s", r.Status, r.Body)
	}
	port, ssrc := liveInviteAtCamera(t, cam.dir)
	sender := psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	testkit.Eventually(t, 60*time.Second, "the stream Online", func() bool {
		var ss struct{ Total int }
		media.call("GET", "/api/v2/third-party/streams?streamId="+cam.channel.Stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	})
	if ps := cam.gbLeases(); len(ps) != 1 || ps[0] != port || udpPortFree(port) {
		t.Fatalf("while playing: leases %v for port %d (free %v)", ps, port, udpPortFree(port))
	}
	// A transfer can be refused while the target catches up: asked again
	// until via leads.
	testkit.Eventually(t, 60*time.Second, "via leading", func() bool {
		if via.S.Node.Leadership().IsLeader() {
			return true
		}
		for _, n := range g.nodes {
			if n.S.Node.Leadership().IsLeader() {
				if err := n.S.Node.Raft().LeadershipTransferToServer(raft.ServerID(ids[via]), raft.ServerAddress(via.S.Node.RaftAddress())).Error(); err != nil {
					t.Logf("leadership transfer: %v", err)
				}
			}
		}
		return via.S.Node.Leadership().IsLeader()
	})
	if r := via.Do("POST", "/api/v2/gb28181/live/stop", control, "application/json",
		[]byte(`{"deviceId":"`+deviceID+`","channelId":"`+channelID+`"}`)); r.Status != 200 {
		t.Fatalf("live stop: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 60*time.Second, "the BYE at the camera, the lease released and the RTP server closed", func() bool {
		return cam.byes() == 1 && len(cam.gbLeases()) == 0 && udpPortFree(port) && cam.dialogs(via.S.Node) == 0
	})
	// The next sessions may lease the same port, with the same SSRC (the
	// first the old leader's, the second the new one's): nothing of this
	// stream may reach them.
	sender.Stop()

	// Every kind of session, with its dialog on the holder.
	if r := via.Do("POST", "/api/v2/gb28181/live/invite", control, "application/json", live); r.Status != 200 {
		t.Fatalf("second live invite: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 60*time.Second, "the second live INVITE at the camera", func() bool { return len(cam.invites()) == 2 })
	pb := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","startTime":"2026-11-28T08:00:00Z","endTime":"2026-11-28T09:00:00Z","mediaServerId":"media-1"}`)
	var sessions []string
	for _, n := range []*controlnode.Node{via, holder} {
		var inv struct{ Session struct{ Id, State string } }
		if r := n.Do("POST", "/api/v2/gb28181/playback/invite", n.Token("devices.control"), "application/json", pb); r.Status != 200 {
			t.Fatalf("playback invite through %s: %d %s\n%s", ids[n], r.Status, r.Body, cam.sippLog())
		} else if r.JSON(t, &inv); inv.Session.State != "Playing" {
			t.Fatalf("playback invite through %s: %s", ids[n], r.Body)
		}
		sessions = append(sessions, inv.Session.Id)
	}
	var talk struct{ Id, MediaState string }
	if r := via.Do("POST", "/api/v2/talk/sessions", via.Token("devices.talk"), "application/json",
		[]byte(`{"protocol":"gb28181","deviceId":"`+deviceID+`","channelId":"`+audioID+`"}`)); r.Status != 200 {
		t.Fatalf("talk session: %d %s\n%s", r.Status, r.Body, cam.sippLog())
	} else if r.JSON(t, &talk); talk.MediaState != "Sending" {
		t.Fatalf("talk session: %s", r.Body)
	}
	// Ten packets of audio reach the camera's speaker before the holder goes.
	audio, _ := json.Marshal(map[string]any{"payload": make([]byte, 10*160)})
	if r := via.Do("POST", "/api/v2/talk/sessions/"+talk.Id+"/audio", via.Token("devices.talk"), "application/json", audio); r.Status != 200 {
		t.Fatalf("talk audio: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 60*time.Second, "ten packets at the camera's speaker", func() bool { return cam.heard.Load() == 10 })
	var ports []int
	testkit.Eventually(t, 60*time.Second, "three RTP leases and three dialogs", func() bool {
		ports = cam.gbLeases()
		return len(ports) == 3 && cam.dialogs(via.S.Node) == 3
	})

	if err := holder.S.Shutdown(); err != nil {
		t.Logf("shutting the holder down: %v", err)
	}
	start := time.Now()
	testkit.Eventually(t, 90*time.Second, "the holder's sessions ended", func() bool {
		if len(cam.gbLeases()) != 0 || cam.dialogs(via.S.Node) != 0 {
			return false
		}
		for _, p := range ports {
			if !udpPortFree(p) {
				return false
			}
		}
		return true
	})
	t.Logf("the holder's sessions ended %v after it stopped", time.Since(start))
	var dev struct{ Status string }
	if r := via.Get("/api/v2/gb28181/devices/"+deviceID, view); r.Status != 200 || json.Unmarshal(r.Body, &dev) != nil || dev.Status != "offline" {
		t.Fatalf("the camera: %d %s", r.Status, r.Body)
	}
	gone := "control node " + ids[holder]
	// The live channel's start counted as failed, with the reason (it
	// then retries, and fails while the camera is offline).
	testkit.Eventually(t, 30*time.Second, "the live channel's failed attempt in its runtime log", func() bool {
		r := via.Get("/api/v2/channels/"+cam.channel.ChannelID+"/runtime-logs?pageSize=50", via.Token("channels.view"))
		return r.Status == 200 && strings.Contains(string(r.Body), "GB28181 session ended: "+gone)
	})
	for _, id := range sessions {
		var s struct{ State, EndReason string }
		if r := via.Get("/api/v2/gb28181/playback/sessions/"+id, view); r.Status != 200 || json.Unmarshal(r.Body, &s) != nil {
			t.Fatalf("playback session %s: %d %s", id, r.Status, r.Body)
		}
		if s.State != "Ended" || !strings.Contains(s.EndReason, gone) {
			t.Fatalf("playback session %s: %+v", id, s)
		}
	}
	var ended struct {
		MediaState, ReleaseReason string
		PacketsSent               int
	}
	if r := via.Get("/api/v2/talk/sessions/"+talk.Id, view); r.Status != 200 || json.Unmarshal(r.Body, &ended) != nil {
		t.Fatalf("talk session: %d %s", r.Status, r.Body)
	}
	if ended.MediaState != "Released" || !strings.Contains(ended.ReleaseReason, gone) || ended.PacketsSent != 10 {
		t.Fatalf("talk session: %+v", ended)
	}
	body, _ := json.Marshal(map[string]any{"payload": make([]byte, 160)})
	if r := via.Do("POST", "/api/v2/talk/sessions/"+talk.Id+"/audio", via.Token("devices.talk"), "application/json", body); r.Status != 409 ||
		!strings.Contains(string(r.Body), gone) {
		t.Fatalf("audio to the ended talk session: %d %s", r.Status, r.Body)
	}
}
