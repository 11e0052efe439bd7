package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181PTZSettingsAndPresets: a SIPp camera whose catalog reports no
// PTZ registers. Its channel's PTZ settings say so and commands are
// refused until an administrator confirms PTZ; the presets come from the
// camera's answer to a PresetQuery; set, goto and delete of a preset and a
// movement reach the camera as the exact PTZCmd bytes; the switch off
// refuses commands again. Each operation checks its permission.
func TestGB28181PTZSettingsAndPresets(t *testing.T) {
	const (
		deviceID  = "34020000001320000005"
		channelID = "34020000001310000005"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_ptz_answer.xml", deviceID, channelID, platform, domain)
	chID := catalogChannel(t, cp, deviceID)
	base := "/api/v2/channels/" + chID + "/ptz"
	chView := backend{t: t, api: cp.api, token: cp.newToken("channels.view")}
	manager := backend{t: t, api: cp.api, token: cp.newToken("channels.manage")}
	devView := backend{t: t, api: cp.api, token: cp.newToken("devices.view")}
	control := backend{t: t, api: cp.api, token: cp.newToken("devices.control")}

	type settings struct {
		DeviceReportsPtz, Enabled, ConfirmedByAdministrator bool
	}
	var set settings
	if st, body := chView.call("GET", base+"/settings", nil, &set); st != 200 || set != (settings{false, true, false}) {
		t.Fatalf("settings: %d %s", st, body)
	}
	type caps struct {
		Pan, Tilt, Zoom, Focus, Iris bool
		Presets                      int
		RefreshedAt                  time.Time
	}
	var c caps
	if st, body := chView.call("GET", base+"/capabilities", nil, &c); st != 200 || c.Pan || c.Presets != 0 || c.RefreshedAt.IsZero() {
		t.Fatalf("capabilities: %d %s", st, body)
	}
	// Not reported, not confirmed: refused, and nothing reaches the camera.
	if st, body := control.call("POST", base, map[string]any{"command": "up"}, nil); st != 409 || !strings.Contains(string(body), "ptz_not_confirmed") {
		t.Fatalf("PTZ before confirmation: %d %s", st, body)
	}
	confirm := map[string]any{"enabled": true, "confirmedByAdministrator": true}
	if st, _ := control.call("PUT", base+"/settings", confirm, nil); st != 403 {
		t.Fatalf("settings without channels.manage: %d", st)
	}
	if st, body := manager.call("PUT", base+"/settings", confirm, &set); st != 200 || set != (settings{false, true, true}) {
		t.Fatalf("confirm: %d %s", st, body)
	}

	// Presets: the camera's PresetQuery answer, in ascending order.
	if st, _ := chView.call("GET", base+"/presets", nil, nil); st != 403 {
		t.Fatalf("presets without devices.view: %d", st)
	}
	var presets struct {
		Presets []struct {
			PresetId int
			Name     string
		}
		RefreshedAt time.Time
	}
	if st, body := devView.call("GET", base+"/presets", nil, &presets); st != 200 || len(presets.Presets) != 2 ||
		presets.Presets[0].PresetId != 1 || presets.Presets[0].Name != "Gate" || presets.Presets[1].PresetId != 3 || presets.Presets[1].Name != "Yard" {
		t.Fatalf("presets: %d %s\n%s", st, body, sippLog())
	}
	if st, _ := chView.call("POST", base+"/capabilities/refresh", nil, nil); st != 403 {
		t.Fatalf("refresh without devices.control: %d", st)
	}
	if st, body := control.call("POST", base+"/capabilities/refresh", nil, &c); st != 200 || !c.Pan || !c.Tilt || !c.Zoom || c.Presets != 2 {
		t.Fatalf("refresh: %d %s", st, body)
	}

	// Commands: the exact PTZCmd bytes at the camera, in order.
	if st, _ := devView.call("POST", base+"/presets/5/goto", nil, nil); st != 403 {
		t.Fatalf("goto without devices.control: %d", st)
	}
	for _, op := range []struct{ method, path string }{{"PUT", "/presets/5"}, {"POST", "/presets/5/goto"}, {"DELETE", "/presets/5"}} {
		var acc struct {
			PresetId int
			Action   string
		}
		if st, body := control.call(op.method, base+op.path, nil, &acc); st != 200 || acc.PresetId != 5 {
			t.Fatalf("%s %s: %d %s", op.method, op.path, st, body)
		}
	}
	if st, _ := control.call("POST", base+"/presets/256/goto", nil, nil); st != 400 {
		t.Fatalf("preset 256: %d", st)
	}
	if st, body := control.call("POST", base, map[string]any{"command": "up", "speed": 100}, nil); st != 200 {
		t.Fatalf("up: %d %s", st, body)
	}
	// Set 0x81, goto 0x82, delete 0x83 of preset 5 (byte 6), then up
	// (0x08) at full speed (pan and tilt speed 0xFF, zoom nibble 0xF0).
	want := "A50F01810005003B A50F01820005003C A50F01830005003D A50F0108FFFFF0AB"
	testkit.Eventually(t, 30*time.Second, "the PTZCmds at the camera", func() bool {
		return strings.Join(ptzCmdsAtCamera(dir), " ") == want
	})

	// Switched off: refused again.
	if st, body := manager.call("PUT", base+"/settings", map[string]any{"enabled": false}, &set); st != 200 || set != (settings{false, false, true}) {
		t.Fatalf("switch off: %d %s", st, body)
	}
	if st, body := control.call("POST", base+"/presets/1/goto", nil, nil); st != 409 || !strings.Contains(string(body), "ptz_disabled") {
		t.Fatalf("goto while off: %d %s", st, body)
	}
}
