package raftnode

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// withWroteRequest records in sent whether any request bytes reached the
// connection, which separates "never sent, safe to retry" from "sent, outcome
// unknown".
func withWroteRequest(ctx context.Context, sent *atomic.Bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { sent.Store(true) },
	})
}
