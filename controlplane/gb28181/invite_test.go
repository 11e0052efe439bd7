package gb28181

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

func TestSIPpInviteThenBye(t *testing.T) {
	for _, tc := range []struct{ device, media, setup string }{
		{"udp", MediaUDP, ""},
		{"udp", MediaTCPPassive, "a=setup:passive"},
		{"tcp", MediaTCPActive, "a=setup:active"},
	} {
		t.Run(tc.device+"/"+tc.media, func(t *testing.T) {
			s, _ := testService(t, time.Minute, 3)
			dev := device{ID: testDeviceID, Password: testPassword, Transport: tc.device, Port: freeUDPPort(t)}
			done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 6000, OOC: "answer_invite.xml"})
			testkit.Eventually(t, 30*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
			m, err := s.Invite(context.Background(), InviteRequest{DeviceID: testDeviceID, ChannelID: catalogChannelID(1),
				MediaIP: "127.0.0.1", MediaPort: 30002, Transport: tc.media, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if m.SSRC != 200000001 || m.DeviceMedia != "127.0.0.1:15060" || m.CallID == "" {
				t.Fatalf("session %+v", m)
			}
			if err := s.Bye(context.Background(), m); err != nil {
				t.Fatalf("BYE: %v", err)
			}
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			for _, want := range []string{"INVITE sip:" + catalogChannelID(1), "m=video 30002", "y=0200000001", "BYE sip:"} {
				if !strings.Contains(res.log, want) {
					t.Fatalf("SIPp did not see %q:\n%s", want, lastLines(res.log, 60))
				}
			}
			if tc.setup != "" && !strings.Contains(res.log, tc.setup) {
				t.Fatalf("no %s in the offer", tc.setup)
			}
		})
	}
}

func TestSIPpInviteRefusedOrUnanswerable(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 4000, OOC: "answer_invite_busy.xml"})
	testkit.Eventually(t, 30*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
	_, err := s.Invite(context.Background(), InviteRequest{DeviceID: testDeviceID, ChannelID: catalogChannelID(1),
		MediaIP: "127.0.0.1", MediaPort: 30002, Transport: MediaUDP, Timeout: 20 * time.Second})
	if !errors.Is(err, ErrInviteRejected) || !strings.Contains(err.Error(), "486") {
		t.Fatalf("busy device: %v", err)
	}
	if res := <-done; res.err != nil {
		t.Fatal(res.err)
	}
	// Bad requests never reach a device.
	for _, r := range []InviteRequest{
		{DeviceID: "123", ChannelID: catalogChannelID(1), MediaIP: "127.0.0.1", MediaPort: 30002, Transport: MediaUDP},
		{DeviceID: testDeviceID, ChannelID: catalogChannelID(1), MediaIP: "nowhere", MediaPort: 30002, Transport: MediaUDP},
		{DeviceID: testDeviceID, ChannelID: catalogChannelID(1), MediaIP: "127.0.0.1", MediaPort: 30002, Transport: "sctp"},
	} {
		if _, err := s.Invite(context.Background(), r); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if _, err := s.Invite(context.Background(), InviteRequest{DeviceID: "34020000001320000077", ChannelID: catalogChannelID(1),
		MediaIP: "127.0.0.1", MediaPort: 30002, Transport: MediaUDP}); !errors.Is(err, ErrDeviceOffline) {
		t.Fatalf("unknown device: %v", err)
	}
}
