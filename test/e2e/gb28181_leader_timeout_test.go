package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181RTPTimeoutAfterLeaderChange: three control nodes; a SIPp
// camera registers with a follower (the holder); the media host's agent
// enrolls through the other follower (via), so the engine's hooks go to
// via. A live session is started by the first leader (its INVITE relayed
// to the holder) and plays; leadership then moves to the holder, so the
// node the engine reports to neither started the session nor leads. The
// camera stays registered but its media stops: the engine's RTP server
// times out (on_rtp_server_timeout) and the session ends from its
// records: the BYE reaches the camera, the RTP server is closed (its port
// binds again), the port lease is released, the stream is no longer
// Online, the channel is not Online (auto-recovery is paused, so no new
// INVITE comes) and no dialog record is left.
func TestGB28181RTPTimeoutAfterLeaderChange(t *testing.T) {
	const (
		deviceID  = "34020000001320000011"
		channelID = "34020000001310000011"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	bin := svcbin.Build(t)
	// Short enough to wait for, long enough that a sender slowed by a
	// loaded machine does not time out while the leadership moves.
	const rtpTimeout = 10 * time.Second
	g := startGBCluster(t, "gt", "camera-pass", domain, platform, func(c *config.Config) { c.GB28181RTPTimeout = rtpTimeout })
	first, holder, via, ids := g.leader, g.holder, g.via, g.ids
	media := &controlNode{t: t, s: via.S, api: via.URL}
	media.token = media.newToken("*")
	media.startMediaHost(bin, "media-1")
	cam := startFaultCamera(t, g, media, deviceID, channelID, platform, domain)
	online := func() bool {
		var ss struct{ Total int }
		media.call("GET", "/api/v2/third-party/streams?streamId="+cam.channel.Stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	}
	channelState := func() string {
		var c struct{ ActualState string }
		if r := via.Get("/api/v2/channels/"+cam.channel.ChannelID, via.Token("channels.view")); r.Status != 200 || json.Unmarshal(r.Body, &c) != nil {
			t.Fatalf("the channel: %d %s", r.Status, r.Body)
		}
		return c.ActualState
	}

	live := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","mediaServerId":"media-1"}`)
	if r := via.Do("POST", "/api/v2/gb28181/live/invite", via.Token("devices.control"), "application/json", live); r.Status != 200 {
		t.Fatalf("live invite: %d %s\n%s", r.Status, r.Body, cam.sippLog())
	}
	port, ssrc := liveInviteAtCamera(t, cam.dir)
	sender := psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	testkit.Eventually(t, 90*time.Second, "the stream and the channel Online", func() bool { return online() && channelState() == "Online" })
	if ps := cam.gbLeases(); len(ps) != 1 || ps[0] != port || udpPortFree(port) || cam.dialogs(via.S.Node) != 1 {
		t.Fatalf("while playing: leases %v for port %d (free %v), %d dialog records", ps, port, udpPortFree(port), cam.dialogs(via.S.Node))
	}
	// Auto-recovery paused, so the end of the session is not followed by
	// a new INVITE (which could lease the same port again).
	if r := via.Do("POST", "/api/v2/channels/"+cam.channel.ChannelID+"/pause", via.Token("channels.manage"), "", nil); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	// A transfer can be refused while the target catches up: asked again
	// until the holder leads.
	testkit.Eventually(t, 90*time.Second, "the holder leading", func() bool {
		if holder.S.Node.Leadership().IsLeader() {
			return true
		}
		for _, n := range g.nodes {
			if n.S.Node.Leadership().IsLeader() {
				if err := n.S.Node.Raft().LeadershipTransferToServer(raft.ServerID(ids[holder]), raft.ServerAddress(holder.S.Node.RaftAddress())).Error(); err != nil {
					t.Logf("leadership transfer: %v", err)
				}
			}
		}
		return holder.S.Node.Leadership().IsLeader()
	})
	if !online() || cam.byes() != 0 {
		t.Fatalf("after the leader change, before the media stopped: online %v, %d BYEs\n%s", online(), cam.byes(), cam.sippLog())
	}
	t.Logf("leadership moved from %s to %s; hooks go to %s", ids[first], ids[holder], ids[via])

	sender.Stop()
	stopped := time.Now()
	testkit.Eventually(t, 120*time.Second, "the silent session ended: BYE at the camera, RTP server closed, lease released, no dialog record", func() bool {
		return cam.byes() == 1 && len(cam.gbLeases()) == 0 && udpPortFree(port) && cam.dialogs(via.S.Node) == 0 && cam.dialogs(holder.S.Node) == 0 && !online()
	})
	t.Logf("the silent session ended %v after the media stopped (RTP timeout %v)", time.Since(stopped).Round(time.Millisecond), rtpTimeout)
	testkit.Eventually(t, 60*time.Second, "the channel no longer Online", func() bool { return channelState() != "Online" })
	if st, n := channelState(), len(cam.invites()); st == "Online" || n != 1 {
		t.Fatalf("after the session ended: channel %s, %d INVITEs at the camera\n%s", st, n, cam.sippLog())
	}
	if held := holder.S.GB28181.HeldDialogs(); held != 0 {
		t.Fatalf("the holder still holds %d dialogs", held)
	}
}
