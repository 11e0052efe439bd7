// Package eventstest gives tests of the event and webhook packages a real
// replicated store: a single-node raft cluster on loopback with the index
// tables they query, not a fake.
package eventstest

import (
	"testing"

	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// OpenNode starts a single-node store that is the ready leader, with a
// fresh keyring, and shuts it down when the test ends.
func OpenNode(t *testing.T, specs ...query.Index) (*raftnode.Node, *keyring.Keyring) {
	t.Helper()
	return storetest.WithKeys(t, specs...)
}
