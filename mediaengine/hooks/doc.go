// Package hooks calls the control plane from the engine, in the manner of
// ZLMediaKit's web hooks: each hook is a JSON POST to <hooks.url>/<name>,
// authenticated with the node's client certificate (mTLS) and/or a bearer
// secret.
//
// on_play and on_publish are synchronous gates: the answer must arrive
// within hooks.timeout and say allow, or the player or publisher is
// refused (fail closed); positive answers are cached for hooks.allowCacheTtl
// per stream, protocol and URL parameters. The event hooks
// (on_stream_changed, on_stream_none_reader, on_flow_report,
// on_server_keepalive) go through a bounded queue served by a few workers,
// so a slow control plane never stalls media and never piles up
// goroutines. An empty hooks.url allows everything and sends nothing.
package hooks
