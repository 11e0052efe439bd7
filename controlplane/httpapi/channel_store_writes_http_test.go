package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// What one channel create costs the store, through the API on a real node,
// page by page (kv, revisions, index tables with their column b-trees, the
// audit record, the runtime log). It used to be 180-300 KiB of WAL (a
// history row with the previous value, a hash row, a meta page, and every
// one of idx_channels' 24 column b-trees on every write).
func TestChannelCreateWritesFewPages(t *testing.T) {
	ts := controlnode.StartNode(t, "wp", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage")}
	for i := 0; i < 50; i++ {
		a.create(rtspChannel(fmt.Sprintf("warm%d", i)))
	}
	var created channelJSON
	w, err := ts.S.Node.State().MeasureWAL(func() { created = a.create(rtspChannel("measured")) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("channel create: %s", w)
	if w.Bytes > 96<<10 {
		t.Errorf("one channel create wrote %d KiB to the WAL", w.Bytes>>10)
	}
	w, err = ts.S.Node.State().MeasureWAL(func() {
		if r := a.call("PUT", "/api/v2/channels/"+created.ChannelID, map[string]any{"description": "changed"}); r.Status != 200 {
			t.Fatalf("update: %d %s", r.Status, r.Body)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("channel description change: %s", w)
	if w.Frames["idx_channels_group_key"]+w.Frames["idx_channels_protocol"]+w.Frames["idx_channels_actual_state"] != 0 {
		t.Errorf("a description change rewrote index b-trees of unchanged columns: %s", w)
	}
}
