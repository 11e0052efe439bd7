// Package recorder writes a stream from the hub into fragmented MP4 files
// (segments) under a recording root, one directory per stream and day.
//
// A segment is ftyp+moov, the space for its segment index (sidx.go: a
// free box while the file is open, an sidx per track once it is finished,
// so that a player seeks over HTTP Range without reading every moof) and
// then one moof+mdat per part. A part holds at
// most PartDuration of media and is written the moment the recorder reads
// the frame that closes it. The hub wakes the recorder at every keyframe
// and otherwise per 16 frames or 200 ms (hub.Reader.SetBatch), so a crash
// of the engine loses at most the open part, and a part that closed on
// its duration rather than at a keyframe less than 200 ms before (or, when
// the source stalled right after, before its next frame); a keyframe always
// starts a new part, so every keyframe is a seek point whose byte offset
// the sidecar index (<file>.idx, JSON lines) records with the part's time,
// duration and frame count.
//
// A segment closes at a keyframe once it has reached the segment duration
// or size, when the publisher's tracks change, when a keyframe carries new
// parameter sets (a resolution change), at the first keyframe after a jump
// of the source's clock, when the stream ends and when recording stops;
// a segment past its duration whose video has gone 10 s without a
// keyframe closes at a plain frame (stream_change.go). The next segment starts with that very keyframe:
// the frames before it (and the audio that arrived before it) are all in
// the closing file, every frame after it in the next, so no frame is lost
// or written twice at a boundary. Timestamps are the stream's own
// timeline (fmp4.ToTimescale), so one file's last frame and the next
// file's first follow each other by one frame duration.
//
// A sidecar without its end line marks a segment that was open when the
// engine died: Repair truncates the file to its last whole fragment,
// rebuilds the index and the sidx from the fragments themselves and
// reports the file
// like any other. Every finished file is reported through the Report
// function (the engine's on_record_mp4 hook) until it succeeds, across
// restarts: the sidecar notes the report once it was accepted.
//
// Lookup answers a file's parsed sidecar from a bounded cache
// (index_cache.go), so a seek costs a stat rather than a read and parse.
//
// Cost: one raw hub reader per recorded stream, woken per batch of
// frames; one writev(2) per part straight from the frames' bytes
// (fmp4.AppendFragmentVec: only the boxes, length prefixes and small
// samples go through a reused buffer) plus one small sidecar append; the
// hub's frames are not copied.
package recorder
