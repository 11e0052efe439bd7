package sqlitefsm

import (
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

func TestArea(t *testing.T) {
	for key, want := range map[string]string{
		"/playback/leases/abc":    "/playback/leases/",
		"/playback/leases/":       "/playback/leases/",
		"/playback/leases/a/b/c":  "/playback/leases/",
		"/security/api-tokens/x1": "/security/api-tokens/",
		"/a/b":                    "/a/b",
		"/a":                      "/a",
		"":                        "",
		"x/y/z":                   "x/y/z",
	} {
		if got := area(key); got != want {
			t.Errorf("area(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestAreaRevisionMovesOnlyWithItsArea: writes elsewhere leave an area's
// revision alone; a put, a delete and a range delete in it move it; a
// reopened state starts every area at its revision.
func TestAreaRevisionMovesOnlyWithItsArea(t *testing.T) {
	h := newHarness(t)
	leases, inbox := "/playback/leases/", "/events/webhook-inbox/"
	h.txn(store.TxnRequest{Then: []store.Op{store.Put(leases+"1", []byte("a"))}}) // rev 1
	if got := h.s.AreaRevision(leases); got != 1 {
		t.Fatalf("after a put: %d", got)
	}
	for i := 0; i < 5; i++ {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(inbox+string(rune('a'+i)), []byte("x"))}})
	}
	if got, all := h.s.AreaRevision(leases), h.s.Revision(); got != 1 || all != 6 {
		t.Fatalf("writes elsewhere moved the area: %d (store %d)", got, all)
	}
	if got := h.s.AreaRevision(leases, inbox); got != 6 {
		t.Fatalf("two areas: %d", got)
	}
	h.txn(store.TxnRequest{Then: []store.Op{store.Delete(leases + "missing")}}) // deletes nothing: the area stays
	if got := h.s.AreaRevision(leases); got != 1 {
		t.Fatalf("a delete of nothing moved the area: %d", got)
	}
	h.txn(store.TxnRequest{Then: []store.Op{store.DeletePrefix(leases)}})
	if got := h.s.AreaRevision(leases); got != h.s.Revision() {
		t.Fatalf("a range delete did not move the area: %d vs %d", got, h.s.Revision())
	}
	rev := h.s.Revision()
	path := h.s.path
	h.s.Close()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.AreaRevision("/never/written/"); got != rev {
		t.Fatalf("a reopened state: %d, want its revision %d", got, rev)
	}
}
