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
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestStaleHoldersMarkDevicesOffline: the devices of a holder that left the
// cluster go offline at the first sweep; those of a holder that stops
// answering only once it has failed for the timeout; those of a holder that
// answers, of the leader itself and devices already offline stay as they
// are. Each device gets one offline event with the reason; later sweeps
// write nothing (rule 7).
func TestStaleHoldersMarkDevicesOffline(t *testing.T) {
	st := storetest.SingleNode(t, DeviceIndex)
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
	h := &StaleHolders{Store: st, Reader: st.State(), NodeID: "leader", Timeout: 30 * time.Second, Log: zaptest.NewLogger(t),
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
// holder reconciles its presence with the record (what it sends the device,
// talk, is told to stop): the next keep-alive is then a recovered device,
// online on the holder again.
func TestHolderMarkedStaleRecoversOnNextKeepalive(t *testing.T) {
	// The presence loop would reconcile on its own (every ten checks),
	// between the sweep and the first keep-alive on a loaded machine: it
	// never runs here, the test reconciles.
	s, st := testService(t, time.Minute, 3, func(c *Config) { c.CheckInterval = time.Hour })
	ctx := context.Background()
	const addr = "127.0.0.1:5999"
	if _, err := s.register(testDeviceID, "udp", addr, 3600, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := &StaleHolders{Store: st, Reader: st.(*raftnode.Node).State(), NodeID: "leader", Timeout: time.Second, Log: zaptest.NewLogger(t),
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
	var told []string
	s.OnDeviceOffline(func(id DeviceID, why string) { told = append(told, string(id)+": "+why) })
	if err := s.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	// What this node still sends the device (talk) is told to stop.
	if len(told) != 1 || !strings.HasPrefix(told[0], string(testDeviceID)+": ") || !strings.Contains(told[0], "offline in the cluster's records") {
		t.Fatalf("told %q", told)
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

// TestStaleHolderSessionsEnd: a holder that left the cluster has its
// sessions' owners told (once the devices are marked) and its dialog
// records deleted; a failing owner keeps the records, so the next sweep,
// which probes the node again for its dialogs, tries again. A device
// offline on a live holder has its dialogs ended too; a live holder's
// dialogs of an online device stay.
func TestStaleHolderSessionsEnd(t *testing.T) {
	st := storetest.SingleNode(t, DeviceIndex)
	ctx := context.Background()
	put := func(key string, v any) {
		op, err := store.PutRecord(key, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
			t.Fatal(err)
		}
	}
	const onGone, onAlive, offAlive = DeviceID("34020000001320000001"), DeviceID("34020000001320000002"), DeviceID("34020000001320000003")
	put(deviceKey(onGone), Device{DeviceID: onGone, Status: StatusOnline, NodeID: "gone"})
	put(deviceKey(onAlive), Device{DeviceID: onAlive, Status: StatusOnline, NodeID: "alive"})
	put(deviceKey(offAlive), Device{DeviceID: offAlive, Status: StatusOffline, NodeID: "alive"})
	const ch = "34020000001310000001"
	put(dialogKey(onGone, ch, "c1"), Dialog{CallID: "c1", DeviceID: onGone, ChannelID: ch, NodeID: "gone"})
	put(dialogKey(onGone, ch, "c2"), Dialog{CallID: "c2", DeviceID: onGone, ChannelID: ch, NodeID: "gone", Playback: true, Origin: "alive"})
	put(dialogKey(onAlive, ch, "c3"), Dialog{CallID: "c3", DeviceID: onAlive, ChannelID: ch, NodeID: "alive"})
	put(dialogKey(offAlive, ch, "c4"), Dialog{CallID: "c4", DeviceID: offAlive, ChannelID: ch, NodeID: "alive"})
	var told []Gone
	fail := true
	h := &StaleHolders{Store: st, Reader: st.State(), NodeID: "leader", Timeout: 30 * time.Second, Log: zaptest.NewLogger(t),
		Probe: func(_ context.Context, n string) (bool, error) { return n != "gone", nil },
		End: []func(context.Context, Gone) error{func(_ context.Context, g Gone) error {
			told = append(told, g)
			if fail && g.Node != "" {
				return errors.New("store busy")
			}
			return nil
		}}}
	callIDs := func() string {
		ds, err := store.Records[Dialog](ctx, st, DialogPrefix, store.Local)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.CallID)
		}
		return strings.Join(ids, " ")
	}
	if n, err := h.Sweep(ctx, time.Now()); err == nil || n != 1 {
		t.Fatalf("first sweep: %d, %v (want the owner's failure reported)", n, err)
	}
	if got := callIDs(); got != "c1 c2 c3" {
		t.Fatalf("after a failed end: dialogs %q, want the gone node's kept and the offline device's deleted", got)
	}
	fail = false
	if _, err := h.Sweep(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := callIDs(); got != "c3" {
		t.Fatalf("dialogs %q, want c3 alone", got)
	}
	var nodes, devices []string
	for _, g := range told {
		if g.Node != "" {
			nodes = append(nodes, g.Node+": "+g.Reason)
		} else {
			devices = append(devices, string(g.Device)+": "+g.Reason)
		}
	}
	if len(nodes) != 2 || nodes[1] != "gone: control node gone left the cluster" {
		t.Fatalf("nodes told %q", nodes)
	}
	if len(devices) != 1 || !strings.Contains(devices[0], string(offAlive)+" went offline") {
		t.Fatalf("devices told %q", devices)
	}
	if _, err := h.Sweep(ctx, time.Now()); err != nil || len(told) != 3 {
		t.Fatalf("a later sweep told %d, %v", len(told)-3, err)
	}
	if !(Gone{Node: "gone"}).Ends("", "gone", "") || (Gone{Node: "gone"}).Ends("alive", "alive", onGone) || !(Gone{Device: onGone}).Ends("alive", "", onGone) {
		t.Fatal("Gone.Ends")
	}
}
