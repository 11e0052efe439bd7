// Package httpmedia is the engine's media HTTP server on httpAddr:
// HTTP-FLV at /{app}/{stream}.live.flv, HTTP-fMP4 at
// /{app}/{stream}.live.mp4 and HLS at /{app}/{stream}/hls.m3u8. Every play
// request passes the on_play gate with its URL parameters first.
//
// The long-lived outputs take the connection over from net/http after the
// gate: the handler goroutine becomes the reader's writer, taking every
// queued packet at once and writing them, as one HTTP chunk, with one
// writev. Responses are chunked (HTTP/1.1), never ranged, and carry CORS
// headers so browser players (flv.js, mpegts.js, hls.js) may fetch them.
package httpmedia
