package proxy

import "errors"

// Errors of the registry, mapped to control API codes by the engine.
var (
	ErrNotFound    = errors.New("proxy: no such proxy")
	ErrExists      = errors.New("proxy: a proxy with this id exists with another source or path")
	ErrPathTaken   = errors.New("proxy: another proxy already pulls into this stream")
	ErrUnsupported = errors.New("proxy: no puller for this URL scheme")
	ErrInvalid     = errors.New("proxy: invalid request")
)
