// Package httpapi is the HTTP boundary of a control node: the gin engine,
// the middleware every request walks through (trace id, access log, metrics,
// authentication, permission from the contract's x-svc-permission, body size
// and content type, request validation against the contract), the one place
// errors become `{code, message, traceId, retryable?}`, and the thin endpoint
// files that hand typed requests to domain packages.
package httpapi
