package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// rateLimited is the 429 answer; Retry-After is whole seconds, rounded up.
func rateLimited(wait time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message: "too many attempts; wait " + strconv.Itoa(retryAfterSeconds(wait)) + " s", Retryable: retryable(true),
		Details: map[string]string{"retryAfterSeconds": strconv.Itoa(retryAfterSeconds(wait))}}
}

func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
