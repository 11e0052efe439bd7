package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Error is an error with its contract code and HTTP status. Domain packages
// return their own sentinels; endpoint code wraps them here.
type Error struct {
	Status    int
	Code      string
	Message   string
	Retryable *bool
	// Details are extra machine-readable facts, such as the captcha id a
	// login must answer next.
	Details map[string]string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func newError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

func retryable(v bool) *bool { return &v }

// ErrorBody is the one error body of the API.
type ErrorBody struct {
	Code      string            `json:"code"`
	Message   string            `json:"message"`
	TraceID   string            `json:"traceId"`
	Retryable *bool             `json:"retryable,omitempty"`
	Details   map[string]string `json:"details,omitempty"`
}

// toError maps any error to its contract form. Unknown errors become 500
// without leaking their text.
func toError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, store.ErrInvalidRequest), errors.Is(err, raftnode.ErrBadMember):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: err.Error(), Err: err}
	case errors.Is(err, store.ErrStorageFull):
		return &Error{Status: http.StatusInsufficientStorage, Code: "storage_full",
			Message: "the control node is short of disk space and refuses writes until space is freed; nothing was written", Retryable: retryable(true), Err: err}
	case errors.Is(err, store.ErrNoLeader), errors.Is(err, store.ErrClosed):
		return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the cluster has no leader right now", Retryable: retryable(true), Err: err}
	case errors.Is(err, store.ErrUnknownOutcome):
		return &Error{
			Status:    http.StatusServiceUnavailable,
			Code:      "unknown_outcome",
			Message:   "the write may or may not have been applied; read the state before retrying",
			Retryable: retryable(false),
			Err:       err,
		}
	case errors.Is(err, store.ErrNotYetVisible):
		return &Error{
			Status:    http.StatusServiceUnavailable,
			Code:      "not_yet_visible",
			Message:   "the write was committed but this node has not applied it yet; do not repeat it, read again shortly",
			Retryable: retryable(false),
			Err:       err,
		}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusServiceUnavailable, Code: "timeout", Message: "the operation did not finish in time", Retryable: retryable(true), Err: err}
	}
	if c, ok := fault.Of(err); ok && c.Kind() != fault.Internal {
		e := &Error{Status: kindStatus[c.Kind()], Code: c.ErrorCode(), Message: err.Error(), Retryable: retryable(c.Retryable()), Err: err}
		var d fault.Detailer
		if errors.As(err, &d) {
			e.Details = d.Details()
		}
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error", Err: err}
}

// kindStatus is the one place a kind of failure becomes an HTTP status.
var kindStatus = map[fault.Kind]int{
	fault.Invalid:         http.StatusBadRequest,
	fault.Unauthenticated: http.StatusUnauthorized,
	fault.Forbidden:       http.StatusForbidden,
	fault.NotFound:        http.StatusNotFound,
	fault.Conflict:        http.StatusConflict,
	fault.TooLarge:        http.StatusRequestEntityTooLarge,
	fault.RateLimited:     http.StatusTooManyRequests,
	fault.Unavailable:     http.StatusServiceUnavailable,
	fault.StorageFull:     http.StatusInsufficientStorage,
	fault.BadGateway:      http.StatusBadGateway,
	fault.GatewayTimeout:  http.StatusGatewayTimeout,
}

// abortWithError writes the error body and stops the chain.
func abortWithError(c *gin.Context, err error) {
	e := toError(err)
	if e.Status >= 500 {
		c.Error(err) // logged by the access log with the trace id
	}
	if e.Status == http.StatusTooManyRequests && c.Writer.Header().Get("Retry-After") == "" {
		after := "1"
		if v, ok := e.Details["retryAfterSeconds"]; ok {
			after = v
		}
		c.Header("Retry-After", after)
	}
	c.AbortWithStatusJSON(e.Status, ErrorBody{Code: e.Code, Message: e.Message, TraceID: traceID(c), Retryable: e.Retryable, Details: e.Details})
}
