package gb28181

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestStaleHoldersMarkDevicesOffline: the devices of a holder that left the
// cluster go offline at the first sweep; those of a holder that stops
// answering only once it has failed for the timeout; those of a holder that
// answers, of the leader itself and devices already offline stay as they
// are. Each device gets one offline event with the reason; later sweeps
// write nothing (rule 7).
func TestStaleHoldersMarkDevicesOffline(t *testing.T) {
	st := storetest.SingleNode(t)
	ctx := context.Background()
	put := func(id, node string, status Status) {
		op, err := store.PutRecord(deviceKey(DeviceID(id)), Device{DeviceID: DeviceID(id), Direction: DirectionInbound, Status: status, NodeID: node, Transport: "udp"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
			t.Fatal(err)
		}
	}
	put("34020000001320000001", "gone", StatusOnline)
	put("34020000001320000002", "silent", StatusOnline)
	put("34020000001320000003", "alive", StatusOnline)
	put("34020000001320000004", "leader", StatusOnline)
	put("34020000001320000005", "silent", StatusOffline)
	probed := map[string]int{}
	h := &StaleHolders{Store: st, NodeID: "leader", Timeout: 30 * time.Second, Log: zaptest.NewLogger(t),
		Probe: func(_ context.Context, n string) (bool, error) {
			probed[n]++
			switch n {
			case "gone":
				return false, nil
			case "silent":
				return true, errors.New("connection refused")
			}
			return true, nil
		}}
	status := func(id string) Status {
		d, err := GetDevice(ctx, st, DeviceID(id))
		if err != nil {
			t.Fatal(err)
		}
		return d.Status
	}
	t0 := time.Now()
	if n, err := h.Sweep(ctx, t0); err != nil || n != 1 {
		t.Fatalf("first sweep: %d, %v", n, err)
	}
	if status("34020000001320000001") != StatusOffline || status("34020000001320000002") != StatusOnline {
		t.Fatal("first sweep: the departed holder's device should be offline, the silent one's not yet")
	}
	if probed["leader"] != 0 {
		t.Fatal("the leader probed itself")
	}
	if n, err := h.Sweep(ctx, t0.Add(29*time.Second)); err != nil || n != 0 {
		t.Fatalf("sweep within the timeout: %d, %v", n, err)
	}
	if n, err := h.Sweep(ctx, t0.Add(31*time.Second)); err != nil || n != 1 {
		t.Fatalf("sweep past the timeout: %d, %v", n, err)
	}
	for id, want := range map[string]Status{"34020000001320000002": StatusOffline, "34020000001320000003": StatusOnline,
		"34020000001320000004": StatusOnline, "34020000001320000005": StatusOffline} {
		if got := status(id); got != want {
			t.Fatalf("%s: %s, want %s", id, got, want)
		}
	}
	if n, err := h.Sweep(ctx, t0.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("a later sweep: %d, %v", n, err)
	}
	evs := deviceEvents(t, st)
	if len(evs) != 2 {
		t.Fatalf("events %v, want two offline", eventNames(evs))
	}
	for _, e := range evs {
		var data deviceEvent
		raw, _ := json.Marshal(e.Data)
		if err := json.Unmarshal(raw, &data); err != nil {
			t.Fatal(err)
		}
		if e.EventName != "device.gb28181.offline" || data.Status != "offline" || data.PreviousStatus == nil || *data.PreviousStatus != "online" ||
			!strings.Contains(data.Reason, "held its SIP transport") {
			t.Fatalf("event %s %+v", e.EventName, data)
		}
	}
}

// TestHolderMarkedStaleRecoversOnNextKeepalive: the leader marked a device
// offline while its holder could not answer (a partition); the holder still
// believes it online, so a keep-alive alone writes nothing, until the
// holder reconciles its presence with the record: the next keep-alive is
// then a recovered device, online on the holder again.
func TestHolderMarkedStaleRecoversOnNextKeepalive(t *testing.T) {
	s, st := testService(t, time.Minute, 3)
	ctx := context.Background()
	const addr = "127.0.0.1:5999"
	if _, err := s.register(testDeviceID, "udp", addr, 3600, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := &StaleHolders{Store: st, NodeID: "leader", Timeout: time.Second, Log: zaptest.NewLogger(t),
		Probe: func(context.Context, string) (bool, error) { return false, nil }}
	if n, err := h.Sweep(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if err := s.keepalive(testDeviceID, "udp", addr, time.Now()); err != nil {
		t.Fatal(err)
	}
	if d, _ := GetDevice(ctx, st, testDeviceID); d.Status != StatusOffline {
		t.Fatalf("before reconciling, a keep-alive changed the record: %s", d.Status)
	}
	if err := s.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.keepalive(testDeviceID, "udp", addr, time.Now()); err != nil {
		t.Fatal(err)
	}
	d, err := GetDevice(ctx, st, testDeviceID)
	if err != nil || d.Status != StatusOnline || d.NodeID != "cp1" {
		t.Fatalf("after reconciling and a keep-alive: %+v, %v", d, err)
	}
	if got := strings.Join(eventNames(deviceEvents(t, st)), " "); got != "registered offline recovered" {
		t.Fatalf("events %q", got)
	}
}
