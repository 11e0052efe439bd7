package gbrtp

import "errors"

// Errors a session ends with.
var (
	// ErrTimeout: no RTP packet arrived for the session's timeout.
	ErrTimeout = errors.New("gbrtp: no RTP received within the timeout")
	// ErrPeerClosed: the device closed the TCP connection.
	ErrPeerClosed = errors.New("gbrtp: the device closed the connection")
	// ErrInvalidConfig: the session's configuration is incomplete.
	ErrInvalidConfig = errors.New("gbrtp: invalid session configuration")
	// ErrTruncated: a TCP connection ended inside an RFC 4571 frame.
	ErrTruncated = errors.New("gbrtp: connection ended inside a frame")
)
