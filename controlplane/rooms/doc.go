// Package rooms owns meeting (RTC) rooms on the control plane (contract B,
// "Meeting (RTC) rooms"): rooms a business backend creates (idempotently,
// by idempotencyKey), the single-use access tickets it hands its users,
// the participants those tickets admit with their participant tokens
// (X-Svc-RTC-Token, rotated by tokenVersion), heartbeats and the timeout
// that ends a silent participant, and the rtc.* events of it all.
//
// One-time things are consumed with a compare in the Txn (DESIGN.md 4):
// joining deletes the ticket only if it is unchanged since it was read, so
// of two joins with one ticket exactly one succeeds. Secrets (tickets,
// participant tokens) are stored as SHA-256 hashes only and shown once.
// Events carry ids and sequence numbers, never a participant's name, a
// subject id, chat or a URL.
//
// Media (WHIP publications, WHEP subscriptions) terminates in the engine's
// WebRTC server (mediaengine/rtc); this package decides who may, and the
// HTTP boundary relays the SDP.
package rooms
