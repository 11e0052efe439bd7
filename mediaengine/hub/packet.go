package hub

import "github.com/svcplatform/svc/mediaengine/media"

// Packet is one frame on its way to readers: for a format feed, the bytes
// the Muxer made of it, shared by every reader of the format; for the raw
// feed, just the frame. A Packet is immutable once queued.
type Packet struct {
	// Frame is the frame the packet carries (raw feed) or was made from.
	Frame *media.Frame
	// Data is the serialised frame of a format feed; nil in the raw feed.
	Data []byte
	// Keyframe marks a packet a reader may start at: a video keyframe, or
	// any packet of a stream without video.
	Keyframe bool
	// Arrived is when the frame entered the hub (monotonic nanoseconds from
	// the hub's start), for frame-to-wire latency.
	Arrived int64
}
