package gb28181

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestFirstRegisterOfADeviceRecordedElsewhere: a node that has no record
// of a device takes its REGISTER for a first one and does not read the
// record, but the Txn's guard finds the record another node made since
// this one started. Registered on cp1, then on cp2, the device is one
// record, moved to cp2 silently, with one registered event; registered
// on both at once, the same. Without the guard cp2 writes a new record
// over cp1's and a second registered event.
func TestFirstRegisterOfADeviceRecordedElsewhere(t *testing.T) {
	st, keys := storetest.WithKeys(t, append([]query.Index{DeviceIndex}, channels.Indexes...)...)
	cp1 := serviceOn(t, st, keys, "cp1", time.Minute, 3)
	cp2 := serviceOn(t, st, keys, "cp2", time.Minute, 3)
	ctx := context.Background()
	registered := func(id DeviceID) int {
		n := 0
		for _, e := range deviceEvents(t, st) {
			if decodeData(t, e)["DeviceId"] == string(id) && e.EventName == "device.gb28181.registered" {
				n++
			}
		}
		return n
	}

	// One after the other: cp2 started before the record existed.
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	dev.run(t, cp1, scenarioArgs{Register: true, Expires: 3600})
	first, err := GetDevice(ctx, st, testDeviceID)
	if err != nil || first.NodeID != "cp1" {
		t.Fatalf("after registering on cp1: %+v, %v", first, err)
	}
	dev.Port = freeUDPPort(t)
	dev.run(t, cp2, scenarioArgs{Register: true, Expires: 3600})
	kv, _, err := store.Get(ctx, st, deviceKey(testDeviceID), store.Local)
	if err != nil || kv == nil {
		t.Fatalf("device record: %v, %v", kv, err)
	}
	d, err := store.Decode[Device](kv)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Version != 2 || d.NodeID != "cp2" || d.Status != StatusOnline || !d.RegisteredAt.Equal(first.RegisteredAt) {
		t.Fatalf("after registering on cp2: version %d, %+v (want version 2, held by cp2, registered at %s)", kv.Version, d, first.RegisteredAt)
	}
	if n := registered(testDeviceID); n != 1 {
		t.Fatalf("%d registered events, want 1", n)
	}

	// At once, on both nodes: one of the two first registrations finds
	// the other's record.
	const other = DeviceID("34020000001320000002")
	a := device{ID: string(other), Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	b := a
	for b.Port == a.Port {
		b.Port = freeUDPPort(t)
	}
	ra, rb := a.start(t, cp1, scenarioArgs{Register: true, Expires: 3600}), b.start(t, cp2, scenarioArgs{Register: true, Expires: 3600})
	for _, r := range []sippResult{<-ra, <-rb} {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	kv, _, err = store.Get(ctx, st, deviceKey(other), store.Local)
	if err != nil || kv == nil {
		t.Fatalf("device record: %v, %v", kv, err)
	}
	if d, err := store.Decode[Device](kv); err != nil || d.Status != StatusOnline || (d.NodeID != "cp1" && d.NodeID != "cp2") {
		t.Fatalf("after registering on both: %+v, %v", d, err)
	}
	if n := registered(other); n != 1 {
		t.Fatalf("%d registered events, want 1", n)
	}
}
