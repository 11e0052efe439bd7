package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestGB28181CommandRelayedToHoldingNode: three control nodes, each with a
// SIP server; a SIPp camera registers with a follower (the holder). Through
// the other follower, which does not hold the camera's SIP transport:
// a preset listing, a preset goto and a movement are relayed over the
// internal link (the presets are the camera's answer, the commands reach it
// as the exact PTZCmd bytes); a record query is sent by the holder and its
// result read on the leader; a live start is dispatched by the leader,
// whose INVITE is relayed to the holder; the stream plays (ffprobe over
// HTTP-FLV); a second start (through the leader) shares the session (the
// camera sees one INVITE); the stop's BYE, sent by the leader's dispatcher,
// reaches the camera through the holder; a history playback started
// through the follower INVITEs through the holder too, the camera's
// MediaStatus 121 at the holder ends the follower's session and its BYE
// reaches the camera. Once the holder is gone, the other follower answers
// 409 gb28181_device_offline promptly, the leader marks the camera offline
// within the holder timeout, and once the camera registers with the other
// follower it is online there and commands reach it.
func TestGB28181CommandRelayedToHoldingNode(t *testing.T) {
	const (
		deviceID  = "34020000001320000007"
		channelID = "34020000001310000007"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	bin := svcbin.Build(t)
	g := startGBCluster(t, "gb", "camera-pass", domain, platform, nil)
	leader, holder, via, ids, sip := g.leader, g.holder, g.via, g.ids, g.sip
	lead := &controlNode{t: t, s: leader.S, api: leader.URL}
	lead.token = lead.newToken("*")
	lead.startMediaHost(bin, "media-1")
	dir, sippLog := startSIPpCamera(t, sip[holder], "gb28181_relay_answer.xml", deviceID, channelID, platform, domain)

	view := via.Token("channels.view")
	var ch struct{ ChannelID, Stream string }
	testkit.Eventually(t, 60*time.Second, "the camera registered with the holder and its channel is seen through the other follower", func() bool {
		r := via.Get("/api/v2/channels?deviceId="+deviceID, view)
		var list struct {
			Total int
			Rows  []struct{ ChannelID, Stream string }
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil || list.Total != 1 {
			return false
		}
		ch = list.Rows[0]
		return true
	})
	var dev struct{ NodeId, Status string }
	if r := via.Get("/api/v2/gb28181/devices/"+deviceID, via.Token("devices.view")); r.Status != 200 {
		t.Fatalf("device: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &dev); dev.NodeId != ids[holder] || dev.Status != "online" {
		t.Fatalf("device: %+v, want held by %s and online", dev, ids[holder])
	}
	base := "/api/v2/channels/" + ch.ChannelID + "/ptz"
	if r := via.Do("PUT", base+"/settings", via.Token("channels.manage"), "application/json",
		[]byte(`{"enabled":true,"confirmedByAdministrator":true}`)); r.Status != 200 {
		t.Fatalf("confirm PTZ: %d %s", r.Status, r.Body)
	}

	// The presets come from the camera's PresetQuery answer, through the holder.
	var presets struct {
		Presets []struct {
			PresetId int
			Name     string
		}
	}
	if r := via.Get(base+"/presets", via.Token("devices.view")); r.Status != 200 {
		t.Fatalf("presets: %d %s\n%s", r.Status, r.Body, sippLog())
	} else if r.JSON(t, &presets); len(presets.Presets) != 2 || presets.Presets[0].Name != "Gate" || presets.Presets[1].PresetId != 3 {
		t.Fatalf("presets: %s", r.Body)
	}
	control := via.Token("devices.control")
	if r := via.Do("POST", base+"/presets/5/goto", control, "", nil); r.Status != 200 {
		t.Fatalf("goto: %d %s\n%s", r.Status, r.Body, sippLog())
	}
	if r := via.Do("POST", base, control, "application/json", []byte(`{"command":"up","speed":100}`)); r.Status != 200 {
		t.Fatalf("up: %d %s\n%s", r.Status, r.Body, sippLog())
	}
	// Goto 0x82 of preset 5, then up (0x08) at full speed.
	want := "A50F01820005003C A50F0108FFFFF0AB"
	testkit.Eventually(t, 30*time.Second, "the relayed PTZCmds at the camera", func() bool {
		return strings.Join(ptzCmdsAtCamera(dir), " ") == want
	})

	// A record query: sent by the holder, its result stored for every node.
	query := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","startTime":"2026-11-28T00:00:00Z","endTime":"2026-11-29T00:00:00Z"}`)
	var task struct{ TaskId string }
	if r := via.Do("POST", "/api/v2/gb28181/records/query", via.Token("devices.view"), "application/json", query); r.Status != 200 {
		t.Fatalf("record query: %d %s\n%s", r.Status, r.Body, sippLog())
	} else {
		r.JSON(t, &task)
	}
	var result struct {
		State   string
		SumNum  int
		Records []struct{ RecordId string }
	}
	testkit.Eventually(t, 30*time.Second, "the record query's result on the leader", func() bool {
		r := leader.Get("/api/v2/gb28181/records/query/"+task.TaskId, leader.Token("devices.view"))
		return r.Status == 200 && json.Unmarshal(r.Body, &result) == nil && result.State != "Running"
	})
	if result.State != "Succeeded" || result.SumNum != 1 || len(result.Records) != 1 {
		t.Fatalf("record query: %+v", result)
	}

	// Live: started through the follower, dispatched by the leader,
	// INVITEd by the holder.
	live := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","mediaServerId":"media-1"}`)
	if r := via.Do("POST", "/api/v2/gb28181/live/invite", control, "application/json", live); r.Status != 200 {
		t.Fatalf("live invite: %d %s", r.Status, r.Body)
	}
	port, ssrc := liveInviteAtCamera(t, dir)
	psrtp.Start(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	testkit.Eventually(t, 60*time.Second, "the stream Online", func() bool {
		var ss struct{ Total int }
		lead.call("GET", "/api/v2/third-party/streams?streamId="+ch.Stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	})
	// A second start, through the leader, shares the session.
	var second struct{ Command struct{ CommandId string } }
	if r := leader.Do("POST", "/api/v2/gb28181/live/invite", leader.Token("devices.control"), "application/json", live); r.Status != 200 {
		t.Fatalf("second live invite: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &second)
	}
	testkit.Eventually(t, 30*time.Second, "the second start Succeeded", func() bool {
		var cmds struct {
			Rows []struct{ CommandId, State string }
		}
		lead.call("GET", "/api/v2/streams/commands?channelId="+ch.ChannelID, nil, &cmds)
		for _, c := range cmds.Rows {
			if c.CommandId == second.Command.CommandId {
				return c.State == "Succeeded"
			}
		}
		return false
	})
	var l lease
	if st := lead.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"leaseSeconds": 60}, &l); st != 200 {
		t.Fatalf("lease: %d", st)
	}
	played := false
	for _, s := range l.Sources {
		if s.Protocol != "http-flv" {
			continue
		}
		r, err := probe(t, s.URL, 5)
		if err != nil {
			t.Fatalf("%s: %v", s.Protocol, err)
		}
		if r.codec != "h264" || r.width != 320 || r.height != 240 || r.span < 3.9 || r.packets < 100 {
			t.Fatalf("%s played %+v", s.Protocol, r)
		}
		played = true
	}
	if !played {
		t.Fatalf("no HTTP-FLV source in %+v", l.Sources)
	}
	invites := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "invites.log"))
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
	}
	if n := len(invites()); n != 1 {
		t.Fatalf("%d INVITEs for two starts (want one shared session): %v\n%s", n, invites(), sippLog())
	}
	// The stop, through the follower: the leader's dispatcher relays the BYE
	// to the holder, which holds the dialog.
	if r := via.Do("POST", "/api/v2/gb28181/live/stop", control, "application/json",
		[]byte(`{"deviceId":"`+deviceID+`","channelId":"`+channelID+`"}`)); r.Status != 200 {
		t.Fatalf("live stop: %d %s", r.Status, r.Body)
	}
	byes := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "bye.txt"))
		return len(strings.Fields(string(b)))
	}
	testkit.Eventually(t, 30*time.Second, "the BYE at the camera", func() bool { return byes() == 1 })

	// History playback through the follower: the session is the
	// follower's, its INVITE and its BYE are sent by the holder.
	pb := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","startTime":"2026-11-28T08:00:00Z","endTime":"2026-11-28T09:00:00Z","mediaServerId":"media-1"}`)
	var inv struct{ Session struct{ Id, State string } }
	if r := via.Do("POST", "/api/v2/gb28181/playback/invite", control, "application/json", pb); r.Status != 200 {
		t.Fatalf("playback invite: %d %s\n%s", r.Status, r.Body, sippLog())
	} else if r.JSON(t, &inv); inv.Session.State != "Playing" {
		t.Fatalf("playback invite: %s", r.Body)
	}
	if n := len(invites()); n != 2 {
		t.Fatalf("%d INVITEs after the playback invite, want 2: %v", n, invites())
	}
	// The camera's MediaStatus 121 reaches the holder, which passes it to
	// the follower: the session ends there and its BYE goes back.
	var sess struct{ State, EndReason string }
	testkit.Eventually(t, 30*time.Second, "the playback session Ended by the camera's MediaStatus 121", func() bool {
		r := via.Get("/api/v2/gb28181/playback/sessions/"+inv.Session.Id, via.Token("devices.view"))
		return r.Status == 200 && json.Unmarshal(r.Body, &sess) == nil && sess.State == "Ended"
	})
	if !strings.Contains(sess.EndReason, "121") {
		t.Fatalf("playback end reason %q", sess.EndReason)
	}
	testkit.Eventually(t, 30*time.Second, "the playback's BYE at the camera", func() bool { return byes() == 2 })

	if err := holder.S.Shutdown(); err != nil {
		t.Logf("shutting the holder down: %v", err)
	}
	start := time.Now()
	r := via.Do("POST", base+"/presets/5/goto", control, "", nil)
	if r.Status != 409 || !strings.Contains(string(r.Body), "gb28181_device_offline") {
		t.Fatalf("goto with the holder gone: %d %s", r.Status, r.Body)
	}
	t.Logf("answer with the holder gone took %v", time.Since(start))

	// The leader notices the holder is gone and marks the camera offline
	// (holder timeout 3 s here).
	devView := via.Token("devices.view")
	testkit.Eventually(t, 60*time.Second, "the camera offline once its holder is gone", func() bool {
		r := via.Get("/api/v2/gb28181/devices/"+deviceID, devView)
		return r.Status == 200 && json.Unmarshal(r.Body, &dev) == nil && dev.Status == "offline"
	})
	t.Logf("the camera was offline %v after its holder stopped", time.Since(start))
	// The camera registers with the other follower, which takes it over;
	// commands through the leader reach it there.
	dir2, sippLog2 := startSIPpCamera(t, sip[via], "gb28181_relay_answer.xml", deviceID, channelID, platform, domain)
	testkit.Eventually(t, 60*time.Second, "the camera online on the other follower", func() bool {
		r := via.Get("/api/v2/gb28181/devices/"+deviceID, devView)
		return r.Status == 200 && json.Unmarshal(r.Body, &dev) == nil && dev.Status == "online" && dev.NodeId == ids[via]
	})
	if r := leader.Do("POST", base+"/presets/7/goto", leader.Token("devices.control"), "", nil); r.Status != 200 {
		t.Fatalf("goto after the takeover: %d %s\n%s", r.Status, r.Body, sippLog2())
	}
	testkit.Eventually(t, 30*time.Second, "the PTZCmd at the camera after the takeover", func() bool {
		return strings.Join(ptzCmdsAtCamera(dir2), " ") == "A50F01820007003E"
	})
}

// gbCluster is three control nodes, each taking device registrations on
// its own SIP address (GB28181 holder timeout 3 s): the leader, the holder
// (the follower a camera registers with) and via (the other follower).
type gbCluster struct {
	nodes               []*controlnode.Node
	leader, holder, via *controlnode.Node
	// ids are the nodes' ids; sip their SIP addresses.
	ids, sip map[*controlnode.Node]string
}

// startGBCluster starts the nodes prefix+"a", "b" and "c", with the GB28181
// device password and tune (when not nil) applied to each node's
// configuration, and waits for a leader.
func startGBCluster(t *testing.T, prefix, password, domain, platform string, tune func(*config.Config)) gbCluster {
	t.Helper()
	passwordFile := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(passwordFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gbCluster{ids: map[*controlnode.Node]string{}, sip: map[*controlnode.Node]string{}}
	start := func(id, join, key string) *controlnode.Node {
		addr := freeUDPAddr(t)
		n := controlnode.StartNodeWith(t, id, join, key, func(c *config.Config) {
			c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain, c.GB28181ID = passwordFile, addr, domain, platform
			c.GB28181HolderTimeout = 3 * time.Second
			if tune != nil {
				tune(c)
			}
		}, nil)
		g.ids[n], g.sip[n] = id, addr
		return n
	}
	a := start(prefix+"a", "", "")
	g.nodes = []*controlnode.Node{a, start(prefix+"b", a.URL, a.KeyFile()), start(prefix+"c", a.URL, a.KeyFile())}
	testkit.Eventually(t, 30*time.Second, "a leader", func() bool {
		for _, n := range g.nodes {
			if n.S.Node.Leadership().IsLeader() {
				g.leader = n
			}
		}
		return g.leader != nil
	})
	var followers []*controlnode.Node
	for _, n := range g.nodes {
		if n != g.leader {
			followers = append(followers, n)
		}
	}
	g.holder, g.via = followers[0], followers[1]
	return g
}
