package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Headers of every delivery (contract A, "Delivery contract").
const (
	HeaderEvent          = "X-Svc-Event"
	HeaderEventID        = "X-Svc-Event-Id"
	HeaderSubscriptionID = "X-Svc-Subscription-Id"
	HeaderTimestamp      = "X-Svc-Timestamp"
	HeaderSignature      = "X-Svc-Signature"
	HeaderIdempotencyKey = "Idempotency-Key"
	ContentType          = "application/json; charset=utf-8"
)

// Sign is the delivery signature: `v1=` + lowercase hex HMAC-SHA256, keyed
// with the plan's secret, over `<timestamp>.<raw body>`.
func Sign(secret []byte, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verification failures of Verify.
var (
	ErrBadSignature = fault.New(fault.Unauthenticated, "authentication_required", "signature does not match")
	ErrStale        = fault.New(fault.Unauthenticated, "authentication_required", "timestamp outside the accepted window")
)

// Verify does what contract A asks of a receiver before parsing the body:
// check the timestamp window and compare the signature in constant time.
// It is what our own tests and receivers written in Go use.
func Verify(secret []byte, timestampHeader, signatureHeader string, body []byte, now time.Time, window time.Duration) error {
	ts, err := strconv.ParseInt(timestampHeader, 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(ts, 0)); d > window || d < -window {
		return ErrStale
	}
	want := Sign(secret, ts, body)
	if !strings.HasPrefix(signatureHeader, "v1=") || !hmac.Equal([]byte(want), []byte(signatureHeader)) {
		return ErrBadSignature
	}
	return nil
}
