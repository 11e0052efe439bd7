package gb28181

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
)

func TestSIPpDeviceLifecycleEmitsOnlyTransitions(t *testing.T) {
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			s, st := testService(t, time.Second, 3)
			dev := device{ID: testDeviceID, Password: testPassword, Transport: transport, Port: freeUDPPort(t)}
			// REGISTER -> 401 -> digest -> 200 with Date, then ten refreshes,
			// each with a keep-alive.
			dev.run(t, s, scenarioArgs{Register: true, Refreshes: 10, Keepalives: 11, Expires: 3600})
			d, err := GetDevice(context.Background(), st, testDeviceID)
			if err != nil || d.Status != StatusOnline || d.Transport != transport || d.NodeID != "cp1" {
				t.Fatalf("device %+v, %v", d, err)
			}
			// Only the first registration wrote the record: the refreshes
			// and keep-alives were no Raft write (no Txn touched it).
			if kv, _, err := store.Get(context.Background(), st, deviceKey(testDeviceID), store.Local); err != nil || kv == nil || kv.Version != 1 {
				t.Fatalf("device record after 10 refreshes and 11 keep-alives: %+v, %v (want version 1)", kv, err)
			}
			// Keep-alives stop: offline after the 3 s window.
			testkit.Eventually(t, 30*time.Second, "offline", func() bool { return slices.Contains(eventNames(deviceEvents(t, st)), "offline") })
			// A keep-alive from a new address (behind NAT) recovers it.
			dev.Port = freeUDPPort(t)
			dev.run(t, s, scenarioArgs{Messages: []string{keepaliveBody(testDeviceID, 99)}, ExpectMessage: 200})
			// Expires: 0 unregisters.
			dev.run(t, s, scenarioArgs{Register: true, Expires: 0})
			if _, err := GetDevice(context.Background(), st, testDeviceID); err == nil {
				t.Fatal("the device record outlived its unregistration")
			}
			// A wrong password: 403 and auth_failed with its reason.
			bad := dev
			bad.Password = "wrong"
			bad.run(t, s, scenarioArgs{Register: true, Expires: 3600, WrongPassword: true})
			const want = "registered,offline,recovered,unregistered,auth_failed"
			testkit.Eventually(t, 20*time.Second, "the auth_failed event", func() bool { return len(deviceEvents(t, st)) >= 5 })
			es := deviceEvents(t, st)
			if got := strings.Join(eventNames(es), ","); got != want {
				t.Fatalf("events %s, want %s", got, want)
			}
			for i, e := range es {
				m := decodeData(t, e)
				if m["DeviceId"] != testDeviceID || m["Direction"] != DirectionInbound || m["occurredAtUtc"] == nil {
					t.Fatalf("event %d data %v", i, m)
				}
				if _, ok := m["Name"]; !ok {
					t.Fatalf("event %d has no Name: %v", i, m)
				}
			}
			if m := decodeData(t, es[1]); m["Status"] != "offline" || m["previousStatus"] != "online" {
				t.Fatalf("offline event %v", m)
			}
			if m := decodeData(t, es[2]); m["Status"] != "online" || m["previousStatus"] != "offline" {
				t.Fatalf("recovered event %v", m)
			}
			if m := decodeData(t, es[4]); !strings.Contains(m["reason"].(string), "password") {
				t.Fatalf("auth_failed event %v", m)
			}
		})
	}
}
