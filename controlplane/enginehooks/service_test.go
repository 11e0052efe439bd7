package enginehooks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/agentport"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// TestInboxWritesHooksInBatches sends hooks faster than one store write
// each and checks that every one is kept, in few Txns: a burst fills whole
// batches at once, and hooks trickling in during a batch's linger join it.
func TestInboxWritesHooksInBatches(t *testing.T) {
	node := storetest.SingleNode(t, events.OutboxIndex)
	ev := &events.Service{Store: node, Reader: node.State(), NodeID: "cp1"}
	s := New(Deps{Events: ev, Store: node, Log: zap.NewNop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	kept := func() int64 {
		_, total, err := ev.ListInbox(context.Background(), events.InboxQuery{HookName: "on_flow_report", Page: 1, PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
	waitKept := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for kept() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d hooks kept, want %d", kept(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send := func(i int) {
		body := fmt.Appendf(nil, `{"app":"live","stream":"s%d","totalBytes":%d}`, i, i)
		ans, err := s.Receive(context.Background(), agentport.Hook{NodeID: "n1", MediaServerID: "ms-1", HookName: "on_flow_report", Body: body})
		if err != nil || !ans.Allow {
			t.Fatalf("hook %d: %+v %v", i, ans, err)
		}
	}

	t.Run("a burst is written in full batches", func(t *testing.T) {
		before := node.Revision()
		for i := range 300 {
			send(i)
		}
		waitKept(300)
		// 300 hooks: four full batches of 64 and one of 44; a slow host may
		// split the first.
		if txns := node.Revision() - before; txns < 5 || txns > 8 {
			t.Fatalf("300 hooks took %d Txns, want 5 to 8", txns)
		}
	})
	t.Run("hooks trickling in join the batch of the first", func(t *testing.T) {
		before := node.Revision()
		for i := range 10 {
			send(1000 + i)
			time.Sleep(300 * time.Microsecond)
		}
		waitKept(310)
		// 10 hooks over about 3 ms, within one 10 ms linger; a slow host
		// may split them once or twice.
		if txns := node.Revision() - before; txns > 3 {
			t.Fatalf("10 hooks 0.3 ms apart took %d Txns, want at most 3", txns)
		}
	})
	if d := s.Dropped(); d != 0 {
		t.Fatalf("%d hooks dropped", d)
	}
}

// TestFlowReportKeepsPublishers: a flow report's WHIP publishers (the
// bytes received from them) are kept in the inbox and its engine.webhook
// event as the engine sent them, beside its players.
func TestFlowReportKeepsPublishers(t *testing.T) {
	node := storetest.SingleNode(t, events.OutboxIndex)
	ev := &events.Service{Store: node, Reader: node.State(), NodeID: "cp1"}
	s := New(Deps{Events: ev, Store: node, Log: zap.NewNop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	report := engineapi.FlowReportHook{
		Players: []engineapi.PlayerFlow{{PlayerInfo: engineapi.PlayerInfo{ID: "p1", App: "live", Stream: "cam", Protocol: "webrtc", Bytes: 1000}}},
		Publishers: []engineapi.PublisherFlow{{ID: "sess-1", App: "live", Stream: "cam", Protocol: "whip", RemoteAddr: "127.0.0.1:5000",
			Bytes: 123456, DurationSec: 2.5, Final: true}}}
	body, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	if ans, err := s.Receive(ctx, agentport.Hook{NodeID: "n1", MediaServerID: "ms-1", HookName: "on_flow_report", Body: body}); err != nil || !ans.Allow {
		t.Fatalf("on_flow_report: %+v %v", ans, err)
	}
	var kept []events.InboxEntry
	testkit.Eventually(t, 30*time.Second, "the flow report in the inbox", func() bool {
		kept, _, err = ev.ListInbox(context.Background(), events.InboxQuery{HookName: "on_flow_report", Page: 1, PageSize: 10})
		return err == nil && len(kept) == 1
	})
	var got engineapi.FlowReportHook
	if err := json.Unmarshal([]byte(kept[0].RawJSON), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Publishers) != 1 || got.Publishers[0] != report.Publishers[0] || len(got.Players) != 1 || got.Players[0].Bytes != 1000 {
		t.Fatalf("kept flow report %s", kept[0].RawJSON)
	}
}
