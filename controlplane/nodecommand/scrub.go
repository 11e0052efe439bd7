package nodecommand

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// scrubbedKey marks a cluster whose node commands were scrubbed, so the
// scan runs once per cluster, not once per leader.
const scrubbedKey = "/nodes/command-secrets-scrubbed"

// ScrubSecrets rewrites the node commands stored by versions that kept a
// camera URL with its credentials in the payload: the payload gets the
// masked URL, and a command still in flight the sealed secret its agent
// now fetches. Run by the leader once per cluster (a marker key records
// that it finished); it returns how many records it changed. The watch
// history keeps the old values until the retention task compacts it.
func (s *Service) ScrubSecrets(ctx context.Context) (int, error) {
	if kv, _, err := store.Get(ctx, s.Store, scrubbedKey, store.Local); err != nil || kv != nil {
		return 0, err
	}
	changed := 0
	from := Prefix
	for {
		resp, err := s.Store.Range(ctx, from, store.RangeOptions{End: store.PrefixEnd(Prefix), Limit: 200})
		if err != nil {
			return changed, err
		}
		for _, kv := range resp.KVs {
			n, err := s.scrubOne(ctx, kv)
			if err != nil {
				return changed, err
			}
			changed += n
		}
		if !resp.More || len(resp.KVs) == 0 {
			break
		}
		from = resp.KVs[len(resp.KVs)-1].Key + "\x00"
	}
	_, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(scrubbedKey, []byte("1"))}})
	return changed, err
}

func (s *Service) scrubOne(ctx context.Context, kv *store.KeyValue) (int, error) {
	for try := 0; try < 3 && kv != nil; try++ {
		r, err := decode(kv)
		if err != nil || r.SealedSecret != "" {
			return 0, nil // not ours to repair, or already sealed
		}
		payload, secret, err := sealURL(r.CommandType, r.Payload)
		if err != nil || secret == "" {
			return 0, nil
		}
		r.Payload = payload
		if !Terminal(r.Status) && s.Keys != nil {
			if r.SealedSecret, err = s.Keys.Seal([]byte(secret), secretAAD(r.CommandID, r.NodeID)); err != nil {
				return 0, err
			}
		}
		val, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{store.Put(kv.Key, val)}})
		if err != nil {
			return 0, fmt.Errorf("scrubbing node command %s: %w", r.CommandID, err)
		}
		if resp.Succeeded {
			return 1, nil
		}
		// The command moved on meanwhile (still with the old payload): read
		// it again.
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return 0, err
		}
		if kv, _, err = store.Get(ctx, s.Store, kv.Key, store.Local); err != nil {
			return 0, err
		}
	}
	return 0, nil
}
