package gb28181

import (
	"context"
	"encoding/hex"
	"regexp"
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
