// Package proxy keeps the engine's pull proxies: each one pulls a source
// URL into a hub stream and, when the source fails or ends, tries again
// with capped exponential backoff per its retry policy.
//
// The registry does not know protocols. It takes a Puller per URL scheme
// (the RTSP client for rtsp:// and rtsps://, the file source for file://),
// so an input is plugged in without changing this package.
package proxy
