package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181CutOffHolderEndsItsDialogs: three control nodes; a SIPp
// camera registers with a follower (the holder) and a live session,
// started through the other follower, has its dialog there. The holder's
// internal link is then cut (the process, its SIP port and the camera go
// on): the leader gives up on it and ends the session without a BYE (the
// RTP lease released, the dialog record gone), and the holder, having
// heard from no leader for the holder timeout, sends the camera the BYE
// itself and forgets the dialog. Let back in, the holder catches up and
// takes nothing back: no dialog in its memory or in the records, no
// second BYE, and the camera is online again through its keep-alives.
//
// A talk session held by the holder (its sender there) ends on both sides
// of the cut: the leader records it Released with the reason, and the
// cut-off holder stops its sender, so audio posted to the holder itself is
// refused and nothing more reaches the camera's speaker.
//
// The RTP server is the leader's to close, not the holder's: it was
// opened by a node command of the leader's dispatcher, and a control node
// reaches a media host only through node commands in the replicated store
// (the agent polls them; no control node dials an agent or an engine, and
// the engine's control secret stays on its host), which a cut-off node
// cannot write. So the test asserts that, once the leader has taken over
// (the holder timeout, 3 s here), the engine's RTP server is closed (its
// port binds again) and the lease is released within a bound.
func TestGB28181CutOffHolderEndsItsDialogs(t *testing.T) {
	const (
		deviceID  = "34020000001320000010"
		channelID = "34020000001310000010"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	bin := svcbin.Build(t)
	g := startGBCluster(t, "gc", "camera-pass", domain, platform, func(c *config.Config) { c.GB28181RTPTimeout = 5 * time.Minute })
	holder, via := g.holder, g.via
	media := &controlNode{t: t, s: via.S, api: via.URL}
	media.token = media.newToken("*")
	media.startMediaHost(bin, "media-1")
	cam := startFaultCamera(t, g, media, deviceID, channelID, platform, domain)
	control := via.Token("devices.control")
	live := []byte(`{"deviceId":"` + deviceID + `","channelId":"` + channelID + `","mediaServerId":"media-1"}`)
	if r := via.Do("POST", "/api/v2/gb28181/live/invite", control, "application/json", live); r.Status != 200 {
		t.Fatalf("live invite: %d %s\n%s", r.Status, r.Body, cam.sippLog())
	}
	port, _ := liveInviteAtCamera(t, cam.dir)
	portFree := func() bool { return udpPortFree(port) }
	testkit.Eventually(t, 60*time.Second, "the dialog held by the holder, its RTP port leased and its RTP server open", func() bool {
		return holder.S.GB28181.HeldDialogs() == 1 && cam.dialogs(via.S.Node) == 1 && len(cam.gbLeases()) == 1 && !portFree()
	})

	// A talk session on the holder, ten packets of it heard.
	var talk struct{ Id, MediaState string }
	if r := via.Do("POST", "/api/v2/talk/sessions", via.Token("devices.talk"), "application/json",
		[]byte(`{"protocol":"gb28181","deviceId":"`+deviceID+`","channelId":"34020000001370000010"}`)); r.Status != 200 {
		t.Fatalf("talk session: %d %s\n%s", r.Status, r.Body, cam.sippLog())
	} else if r.JSON(t, &talk); talk.MediaState != "Sending" {
		t.Fatalf("talk session: %s", r.Body)
	}
	frames := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"payload": make([]byte, n*160)})
		return b
	}
	if r := via.Do("POST", "/api/v2/talk/sessions/"+talk.Id+"/audio", via.Token("devices.talk"), "application/json", frames(10)); r.Status != 200 {
		t.Fatalf("talk audio: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 60*time.Second, "ten packets at the camera's speaker", func() bool { return cam.heard.Load() == 10 })
	// Written while the holder can still write.
	holderTalk := holder.Token("devices.talk", "devices.view")

	holder.S.Node.SetCutOff(true)
	cut := time.Now()
	testkit.Eventually(t, 90*time.Second, "the BYE from the cut-off holder at the camera, the session ended by the leader", func() bool {
		return cam.byes() == 1 && holder.S.GB28181.HeldDialogs() == 0 && cam.dialogs(via.S.Node) == 0 && len(cam.gbLeases()) == 0
	})
	t.Logf("the cut-off holder's dialog ended %v after the cut", time.Since(cut).Round(time.Millisecond))
	// The leader has taken over (the lease is released): the RTP server
	// it opened is closed within a bound, though the holder could not.
	took := time.Now()
	testkit.Eventually(t, 60*time.Second, "the RTP server closed by the leader (its port binds again)", portFree)
	t.Logf("the RTP server's port was free %v after the leader released the lease", time.Since(took).Round(time.Millisecond))
	gone := g.ids[holder]
	testkit.Eventually(t, 60*time.Second, "the talk session Released by the leader, with the reason", func() bool {
		var s struct{ MediaState, ReleaseReason string }
		r := via.Get("/api/v2/talk/sessions/"+talk.Id, via.Token("devices.view"))
		return r.Status == 200 && json.Unmarshal(r.Body, &s) == nil && s.MediaState == "Released" && strings.Contains(s.ReleaseReason, gone)
	})
	testkit.Eventually(t, 60*time.Second, "the talk sender stopped on the cut-off holder", func() bool {
		var s struct{ MediaState, ReleaseReason string }
		r := holder.Get("/api/v2/talk/sessions/"+talk.Id, holderTalk)
		return r.Status == 200 && json.Unmarshal(r.Body, &s) == nil && s.MediaState == "Released" && strings.Contains(s.ReleaseReason, "cut off")
	})
	if r := holder.Do("POST", "/api/v2/talk/sessions/"+talk.Id+"/audio", holderTalk, "application/json", frames(1)); r.Status != 409 {
		t.Fatalf("audio posted to the cut-off holder: %d %s", r.Status, r.Body)
	}
	if n := cam.heard.Load(); n != 10 {
		t.Fatalf("%d packets at the camera's speaker after the cut, want the 10 sent before", n)
	}

	holder.S.Node.SetCutOff(false)
	testkit.Eventually(t, 90*time.Second, "the holder back in contact and caught up, the camera online again", func() bool {
		var dev struct{ Status string }
		r := via.Get("/api/v2/gb28181/devices/"+deviceID, via.Token("devices.view"))
		return holder.S.Node.InContact(time.Second) && r.Status == 200 && json.Unmarshal(r.Body, &dev) == nil && dev.Status == "online"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := holder.S.Node.WaitForRevision(ctx, via.S.Node.Revision()); err != nil {
		t.Fatalf("the holder catching up: %v", err)
	}
	if n, held, b := cam.dialogs(holder.S.Node), holder.S.GB28181.HeldDialogs(), cam.byes(); n != 0 || held != 0 || b != 1 {
		t.Fatalf("after the holder came back: %d dialog records, %d dialogs held, %d BYEs at the camera\n%s", n, held, b, cam.sippLog())
	}
}
