// Package hub is the engine's stream hub: streams keyed by media.Path, one
// publisher each, fanned out to readers.
//
// The cost model decides the shape. A frame enters once (Publisher.
// WriteFrame); for each output format that has readers (a feed), the
// stream's Muxer serialises the frame once into a Packet, and every reader
// of that format gets a reference to the same Packet in its bounded queue.
// The reader's writer takes all queued packets at once (Next, or TryNext
// after a notify) and writes them with one vectored write, so the
// per-reader cost is a queue push and a share of a writev, and nothing is
// allocated per reader per frame. With a merge window, readers are woken
// once per window rather than per frame.
//
// A reader that falls behind its queue bound drops frames (counted) until
// the next keyframe and never blocks the publisher or other readers. Each
// feed keeps the packets since the last keyframe (the GOP cache), so a new
// reader starts decoding at once.
//
// Hot-path state is guarded by a mutex per stream and per reader rather
// than owned by a goroutine: a channel round trip per frame per reader
// would cost more than the work it guards.
package hub
