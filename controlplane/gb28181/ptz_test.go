package gb28181

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

func TestPTZCmdBytesAndChecksum(t *testing.T) {
	for _, tc := range []struct {
		p    PTZ
		want string
	}{
		{PTZ{}, "A50F0100000000B5"},                            // stop
		{PTZ{Pan: 1, PanSpeed: 0x80}, "A50F01018000" + "0036"}, // right at half speed
		{PTZ{Tilt: 1, TiltSpeed: 0xff}, "A50F010800FF00BC"},
		{PTZ{Zoom: 1, ZoomSpeed: 0x0f}, "A50F01100000F0B5"},
	} {
		if got := PTZCmd(tc.p); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.p, got, tc.want)
		}
	}
	if got := PresetCmd(PresetGoto, 3); got != "A50F0182000300"+"3A" {
		t.Errorf("goto preset 3: %s", got)
	}
}

// validPTZCmd checks a PTZCmd's checksums.
func validPTZCmd(s string) bool {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 || b[0] != 0xa5 || b[1]&0x0f != (b[0]>>4+b[0]&0x0f+b[1]>>4)%16 {
		return false
	}
	sum := 0
	for _, v := range b[:7] {
		sum += int(v)
	}
	return byte(sum%256) == b[7]
}

var ptzRE = regexp.MustCompile(`<PTZCmd>([0-9A-F]{16})</PTZCmd>`)

func TestSIPpDeviceReceivesPTZCmd(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 4000, OOC: "answer_control.xml"})
	testkit.Eventually(t, 30*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
	cmd := PTZCmd(PTZ{Pan: -1, Tilt: 1, PanSpeed: 0x40, TiltSpeed: 0x40})
	if err := s.DeviceControl(context.Background(), testDeviceID, catalogChannelID(1), cmd); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	m := ptzRE.FindStringSubmatch(res.log)
	if m == nil || m[1] != cmd || !validPTZCmd(m[1]) {
		t.Fatalf("PTZCmd at the device: %v\n%s", m, lastLines(res.log, 30))
	}
	if err := s.DeviceControl(context.Background(), testDeviceID, catalogChannelID(1), "A50F"); err == nil {
		t.Fatal("a short PTZCmd was sent")
	}
}

// presetBody is a device's PresetQuery answer.
func presetBody(sn int64, channelID string, items ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"GB2312\"?>\n<Response>\n<CmdType>PresetQuery</CmdType>\n<SN>%d</SN>\n<DeviceID>%s</DeviceID>\n<PresetList Num=\"%d\">\n",
		sn, channelID, len(items)/2)
	for i := 0; i+1 < len(items); i += 2 {
		fmt.Fprintf(&b, "<Item>\n<PresetID>%s</PresetID>\n<PresetName>%s</PresetName>\n</Item>\n", items[i], items[i+1])
	}
	b.WriteString("</PresetList>\n</Response>")
	return b.String()
}

// TestSIPpPresetQueryAndPresetCommands: the device answers the platform's
// PresetQuery (its first MANSCDP command, SN 1) with three presets, one of
// them out of range and one repeated; then set, goto and delete of preset
// 7 reach it as the exact PTZCmd bytes of GB/T 28181 A.3.3.
func TestSIPpPresetQueryAndPresetCommands(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	ch := catalogChannelID(1)
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 3000, TailMs: 6000, ExpectMessage: 200,
		Messages: []string{presetBody(1, ch, "2", "门口", "1", "Gate", "300", "too far", "2", "again")}})
	testkit.Eventually(t, 30*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
	ps, err := s.QueryPresets(context.Background(), testDeviceID, ch)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0] != (Preset{1, "Gate"}) || ps[1] != (Preset{2, "门口"}) {
		t.Fatalf("presets %+v", ps)
	}
	for _, op := range []byte{PresetSet, PresetGoto, PresetDelete} {
		if err := s.ChannelPreset(context.Background(), testDeviceID, ch, op, 7); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ChannelPreset(context.Background(), testDeviceID, ch, PresetGoto, 256); !errors.Is(err, ErrInvalid) {
		t.Fatalf("preset 256: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !strings.Contains(res.log, "<CmdType>PresetQuery</CmdType>\r\n<SN>1</SN>\r\n<DeviceID>"+ch+"</DeviceID>") {
		t.Fatalf("no PresetQuery for %s at the device:\n%s", ch, lastLines(res.log, 40))
	}
	var got []string
	for _, m := range ptzRE.FindAllStringSubmatch(res.log, -1) {
		got = append(got, m[1])
	}
	// A5 0F 01, the instruction, 00, the preset, 00, and the sum of the
	// seven bytes modulo 256.
	want := []string{"A50F01810007003D", "A50F01820007003E", "A50F01830007003F"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("PTZCmds at the device %v, want %v", got, want)
	}
	for _, c := range got {
		if !validPTZCmd(c) {
			t.Fatalf("checksum of %s", c)
		}
	}
}

// TestPresetQueryUnansweredTimesOut: nobody answers, the query ends with
// gb28181_device_timeout at the caller's deadline.
func TestPresetQueryUnansweredTimesOut(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 4000})
	testkit.Eventually(t, 30*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.QueryPresets(ctx, testDeviceID, catalogChannelID(1)); !errors.Is(err, ErrDeviceTimeout) {
		t.Fatalf("unanswered PresetQuery: %v", err)
	}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}
