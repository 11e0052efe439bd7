// Package httpmedia is the engine's media HTTP server on httpAddr:
// HTTP-FLV at /{app}/{stream}.live.flv, HTTP-fMP4 at
// /{app}/{stream}.live.mp4 and HLS at /{app}/{stream}/hls.m3u8. Every play
// request passes the on_play gate with its URL parameters first.
//
// The long-lived outputs take the connection over from net/http after the
// gate and hand it to a write shard (one per core): a reader with new
// packets puts its connection on its shard's ready list, and the shard
// writes every ready connection's queued packets as one HTTP chunk with one
// non-blocking writev. A frame thus costs one wake-up per shard, not one per
// player, and a full socket keeps its unwritten bytes while its hub queue
// drops. Responses are chunked (HTTP/1.1), never ranged, and carry CORS
// headers so browser players (flv.js, mpegts.js, hls.js) may fetch them.
package httpmedia
