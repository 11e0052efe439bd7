package playback

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// The sweep ends exactly the leases past either expiry and those whose
// token failed, leaves the rest, and reports the earliest remaining expiry.
func TestSweepEndsOnlyWhatMustEnd(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	create := func(c Caller) *Lease {
		l, _, err := f.s.CreateLiveLease(ctx, c, "cam1", LeaseRequest{LeaseSeconds: ip(60)})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a1, a2, a3, b1, b2 := create(callerA), create(callerA), create(callerA), create(callerB), create(callerB)
	f.clk.add(40 * time.Second)
	for _, l := range []*Lease{a1, b1} {
		if _, _, err := f.s.Renew(ctx, Caller{TokenID: l.TokenID, Permissions: []string{"streams.play"}}, l.LeaseID, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.clk.add(20*time.Second + time.Millisecond) // past the first round only
	due, err := f.s.endLeases(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	state := func(l *Lease) string {
		got, _, err := f.s.Get(ctx, l.LeaseID)
		if err != nil {
			t.Fatal(err)
		}
		return got.State
	}
	for _, c := range []struct {
		l    *Lease
		want string
	}{{a1, StateActive}, {a2, StateExpired}, {a3, StateExpired}, {b1, StateActive}, {b2, StateExpired}} {
		if got := state(c.l); got != c.want {
			t.Errorf("lease %s of %s: %s, want %s", c.l.LeaseID, c.l.TokenID, got, c.want)
		}
	}
	renewed, _, _ := f.s.Get(ctx, a1.LeaseID)
	if d := renewed.ExpiresAt.Sub(due); d < 0 || d >= time.Millisecond {
		t.Errorf("due %v, want the renewed expiry %v", due, renewed.ExpiresAt)
	}
	// tokB is revoked: only its lease ends, as revoked.
	f.mu.Lock()
	f.tokens["tokB"] = TokenState{}
	f.mu.Unlock()
	if _, err := f.s.endLeases(ctx, true); err != nil {
		t.Fatal(err)
	}
	if state(a1) != StateActive || state(b1) != StateRevoked {
		t.Fatalf("after tokB's revocation: a1 %s, b1 %s", state(a1), state(b1))
	}
}

// A lease stored before EndsAtMs was kept has no index value for it: the
// sweeper stamps it when it starts, then ends it on time.
func TestSweepEndsLeasesStoredWithoutEndsAt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clk.now()
	old := map[string]bool{uuid.NewString(): true, uuid.NewString(): false}
	for id, expired := range old {
		l := Lease{LeaseID: id, TokenID: "tokA", Permission: "streams.play", MediaServerID: "ms1", State: StateActive,
			ExpiresAt: now.Add(time.Minute), AbsoluteExpiresAt: now.Add(time.Hour)}
		if expired {
			l.ExpiresAt = now.Add(-time.Millisecond)
		}
		b, _ := json.Marshal(l)
		var raw map[string]any
		json.Unmarshal(b, &raw)
		delete(raw, "endsAtMs")
		b, _ = json.Marshal(raw)
		if _, err := f.s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(LeasesPrefix+id, b)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.stampUnindexed(ctx); err != nil {
		t.Fatal(err)
	}
	due, err := f.s.endLeases(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for id, expired := range old {
		got, _, err := f.s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ended := got.State != StateActive; ended != expired {
			t.Errorf("lease expiring %v: ended %v", got.ExpiresAt.Sub(now), ended)
		}
		if !expired && !due.Equal(got.ExpiresAt.Truncate(time.Millisecond)) {
			t.Errorf("due %v, want %v", due, got.ExpiresAt)
		}
	}
}

// Every write of a lease stores EndsAtMs from its times.
func TestLeaseRecordKeepsEndsAt(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 999_999_999, time.UTC)
	l := Lease{State: StateActive, ExpiresAt: now.Add(time.Minute), AbsoluteExpiresAt: now.Add(30 * time.Second), EndsAtMs: 1}
	b, err := json.Marshal(&l)
	if err != nil {
		t.Fatal(err)
	}
	var back Lease
	json.Unmarshal(b, &back)
	if want := now.Add(30 * time.Second).UnixMilli(); back.EndsAtMs != want {
		t.Fatalf("endsAtMs %d, want %d", back.EndsAtMs, want)
	}
	// An ended lease leaves the expiry index.
	l.State = StateExpired
	b, _ = json.Marshal(l)
	if strings.Contains(string(b), "endsAtMs") {
		t.Fatalf("an ended lease keeps endsAtMs: %s", b)
	}
}

// BenchmarkSweepLook is one look at 10,000 Active leases of two tokens,
// none due: "leases" is what the sweeper pays at a tick after players
// renewed, "leases and tokens" after a token changed, and "decode all" is
// the look it made before, reading every Active lease.
func BenchmarkSweepLook(b *testing.B) {
	f := newFixture(&testing.T{})
	ctx := context.Background()
	now := f.clk.now()
	for i := 0; i < 10000; i += 500 {
		var ops []store.Op
		for j := i; j < i+500; j++ {
			l := Lease{LeaseID: uuid.NewString(), TokenID: "tokA", Permission: "streams.play", MediaServerID: "ms1", State: StateActive,
				Vhost: DefaultVhost, App: "live", Stream: "cam1", Protocols: AllProtocols, LeaseSeconds: 60,
				CreatedAt: now, ExpiresAt: now.Add(time.Minute), RenewAfter: now.Add(42 * time.Second), AbsoluteExpiresAt: now.Add(time.Hour)}
			if j%10 != 0 {
				l.TokenID = "tokB"
			}
			raw, _ := json.Marshal(l)
			ops = append(ops, store.Put(LeasesPrefix+l.LeaseID, raw))
		}
		if _, err := f.s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		tokens bool
	}{{"leases", false}, {"leases and tokens", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.s.endLeases(ctx, c.tokens); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decode all", func(b *testing.B) {
		for b.Loop() {
			if _, err := query.All(ctx, f.s.Reader, query.Query{Index: LeaseIndex.Name, Where: []query.Cond{query.Eq("state", StateActive)}},
				query.JSON[Lease]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
