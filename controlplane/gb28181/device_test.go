package gb28181

import (
	"context"
	"fmt"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestDevicePageFiltersByStatusIndex: the device list's status filter is
// answered from the index, ordered by id, paged, with the total of the
// filter; a transition moves a device from one status's list to the other.
func TestDevicePageFiltersByStatusIndex(t *testing.T) {
	st := storetest.SingleNode(t, DeviceIndex)
	ctx := context.Background()
	put := func(id DeviceID, status Status) {
		t.Helper()
		op, err := store.PutRecord(deviceKey(id), Device{DeviceID: id, Direction: DirectionInbound, Status: status, Transport: "udp"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
			t.Fatal(err)
		}
	}
	id := func(i int) DeviceID { return DeviceID(fmt.Sprintf("340200000013200%05d", i)) }
	// Written out of order: the list is by id, not by write.
	for _, i := range []int{7, 1, 4, 2, 6, 3, 5} {
		status := StatusOnline
		if i%3 == 0 {
			status = StatusOffline
		}
		put(id(i), status)
	}
	ids := func(status Status, page, size int) (string, int64) {
		t.Helper()
		rows, total, err := DevicePage(ctx, st.State(), status, page, size)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, d := range rows {
			if status != "" && d.Status != status {
				t.Fatalf("%s listed as %s", d.DeviceID, d.Status)
			}
			s += string(d.DeviceID[len(d.DeviceID)-1:])
		}
		return s, total
	}
	for _, c := range []struct {
		status     Status
		page, size int
		want       string
		total      int64
	}{
		{StatusOnline, 1, 50, "12457", 5},
		{StatusOffline, 1, 50, "36", 2},
		{"", 1, 50, "1234567", 7},
		{StatusOnline, 2, 2, "45", 5},
		{StatusOnline, 3, 2, "7", 5},
		{StatusOnline, 4, 2, "", 5},
	} {
		if got, total := ids(c.status, c.page, c.size); got != c.want || total != c.total {
			t.Errorf("status %q page %d of %d: got %q of %d, want %q of %d", c.status, c.page, c.size, got, total, c.want, c.total)
		}
	}
	put(id(3), StatusOnline)
	put(id(4), StatusOffline)
	if got, total := ids(StatusOnline, 1, 50); got != "12357" || total != 5 {
		t.Errorf("online after the transitions: %q of %d, want 12357 of 5", got, total)
	}
	if got, total := ids(StatusOffline, 1, 50); got != "46" || total != 2 {
		t.Errorf("offline after the transitions: %q of %d, want 46 of 2", got, total)
	}
}
