package httpapi_test

import (
	"bytes"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
)

func bytesReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }

func containsText(s, sub string) bool { return strings.Contains(s, sub) }

func txnPut(key, val string) store.TxnRequest {
	return store.TxnRequest{Then: []store.Op{store.Put(key, []byte(val))}}
}
