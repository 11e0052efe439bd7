package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestGB28181CommandRelayedToHoldingNode: a SIPp camera registers with
// control node A. A preset listing, a preset goto and a movement sent to
// node B, which does not hold the camera's SIP transport, are relayed over
// the internal link: the presets are the camera's answer and the commands
// reach it as the exact PTZCmd bytes. Once A is gone, B answers 409 gb28181_device_offline promptly.
// A third member keeps the quorum when A stops.
func TestGB28181CommandRelayedToHoldingNode(t *testing.T) {
	const (
		deviceID  = "34020000001320000007"
		channelID = "34020000001310000007"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	pw := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(pw, []byte("camera-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	withSIP := func(addr string) func(*config.Config) {
		return func(c *config.Config) {
			c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain, c.GB28181ID = pw, addr, domain, platform
		}
	}
	sipA := freeUDPAddr(t)
	a := controlnode.StartNodeWith(t, "gba", "", "", withSIP(sipA), nil)
	b := controlnode.StartNodeWith(t, "gbb", a.URL, a.KeyFile(), withSIP(freeUDPAddr(t)), nil)
	controlnode.StartNode(t, "gbc", a.URL, a.KeyFile())
	dir, sippLog := startSIPpCamera(t, sipA, "gb28181_ptz_answer.xml", deviceID, channelID, platform, domain)

	view := b.Token("channels.view")
	var chID string
	testkit.Eventually(t, 60*time.Second, "the camera registered with A and its channel is seen on B", func() bool {
		r := b.Get("/api/v2/channels?deviceId="+deviceID, view)
		var list struct {
			Total int
			Rows  []struct{ ChannelID string }
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil || list.Total != 1 {
			return false
		}
		chID = list.Rows[0].ChannelID
		return true
	})
	var dev struct{ NodeId, Status string }
	if r := b.Get("/api/v2/gb28181/devices/"+deviceID, b.Token("devices.view")); r.Status != 200 {
		t.Fatalf("device on B: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &dev); dev.NodeId != "gba" || dev.Status != "online" {
		t.Fatalf("device on B: %+v, want held by gba and online", dev)
	}
	base := "/api/v2/channels/" + chID + "/ptz"
	if r := b.Do("PUT", base+"/settings", b.Token("channels.manage"), "application/json",
		[]byte(`{"enabled":true,"confirmedByAdministrator":true}`)); r.Status != 200 {
		t.Fatalf("confirm PTZ: %d %s", r.Status, r.Body)
	}

	// The presets come from the camera's PresetQuery answer, through A.
	var presets struct {
		Presets []struct {
			PresetId int
			Name     string
		}
	}
	if r := b.Get(base+"/presets", b.Token("devices.view")); r.Status != 200 {
		t.Fatalf("presets through B: %d %s\n%s", r.Status, r.Body, sippLog())
	} else if r.JSON(t, &presets); len(presets.Presets) != 2 || presets.Presets[0].Name != "Gate" || presets.Presets[1].PresetId != 3 {
		t.Fatalf("presets through B: %s", r.Body)
	}

	control := b.Token("devices.control")
	if r := b.Do("POST", base+"/presets/5/goto", control, "", nil); r.Status != 200 {
		t.Fatalf("goto through B: %d %s\n%s", r.Status, r.Body, sippLog())
	}
	if r := b.Do("POST", base, control, "application/json", []byte(`{"command":"up","speed":100}`)); r.Status != 200 {
		t.Fatalf("up through B: %d %s\n%s", r.Status, r.Body, sippLog())
	}
	// Goto 0x82 of preset 5, then up (0x08) at full speed.
	want := "A50F01820005003C A50F0108FFFFF0AB"
	testkit.Eventually(t, 30*time.Second, "the relayed PTZCmds at the camera", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "ptz.txt"))
		return strings.Join(strings.Fields(string(b)), " ") == want
	})
	if err := a.S.Shutdown(); err != nil {
		t.Logf("shutting A down: %v", err)
	}
	start := time.Now()
	r := b.Do("POST", base+"/presets/5/goto", control, "", nil)
	if r.Status != 409 || !strings.Contains(string(r.Body), "gb28181_device_offline") {
		t.Fatalf("goto with A gone: %d %s", r.Status, r.Body)
	}
	t.Logf("answer with the holder gone took %v", time.Since(start))
}
