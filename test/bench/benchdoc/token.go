package benchdoc

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/store"
)

// WriteToken writes an API token record through st, as a benchmark's
// setup rather than through the API: rec's id, name, owner, permissions
// and allowed addresses, with a new secret whose digest and prefix it
// fills in. It returns the token.
func WriteToken(ctx context.Context, st store.Store, rec apitoken.Record) (string, error) {
	tok, err := apitoken.New()
	if err != nil {
		return "", err
	}
	rec.Digest, rec.TokenPrefix, rec.CreatedAt = apitoken.Digest(tok), tok[:12], time.Now()
	op, err := apitoken.Put(rec)
	if err != nil {
		return "", err
	}
	_, err = st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	return tok, err
}
