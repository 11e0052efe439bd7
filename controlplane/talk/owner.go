package talk

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// OwnerPrefix records which control node holds each talk session: its
// sender and the device's dialog live in that node's memory, so the other
// nodes pass the session's operations there.
const OwnerPrefix = "/talk/sessions/"

// Owner is the replicated record of where a session lives.
type Owner struct {
	SessionID string `json:"sessionId"`
	NodeID    string `json:"nodeId"`
}

// PutOwner records that nodeID holds session id.
func PutOwner(ctx context.Context, st store.Store, id, nodeID string) error {
	op, err := store.PutRecord(OwnerPrefix+id, Owner{SessionID: id, NodeID: nodeID})
	if err != nil {
		return err
	}
	_, err = st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	return err
}

// OwnerOf answers the node holding session id, ErrNotFound when none
// recorded it.
func OwnerOf(ctx context.Context, st store.Store, id string) (string, error) {
	o, kv, err := store.GetRecord[Owner](ctx, st, OwnerPrefix+id, store.Local)
	if err != nil {
		return "", err
	}
	if kv == nil {
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return o.NodeID, nil
}
