// Package hls serves HLS from memory: /{app}/{stream}/hls.m3u8 opens a
// per-viewer session (the player's svc_ticket and svc_viewer are kept with
// it, so it is listed, reported and kicked like any player) and answers a
// master playlist pointing at the session's media playlist. Each stream has
// one Segmenter, shared by all its viewers, that reads the hub's frames and
// cuts segments at keyframes once hls.segmentDuration has passed, as
// fragmented MP4 (one moof per segment) or MPEG-TS (go-astits) per
// hls.format; playlists are rendered with grafov/m3u8. MPEG-TS has no VP8
// format: such a stream's playlist is refused (ErrNoTSVideo), while fMP4
// segments carry it as vp08.
//
// Viewers that stop asking for the playlist expire after
// hls.sessionTimeout; a segmenter without sessions stops. A segmenter
// outlives a publisher change: it subscribes again and marks the next
// segment as a discontinuity, so HLS players resume by themselves, and it
// moves the new publisher's timestamps to continue after the old one's
// (a reconnected source starts again near zero).
package hls
