package hub

import "github.com/svcplatform/svc/mediaengine/media"

// Format is an output format (HTTP-FLV, HTTP-fMP4) that serialises a
// stream once for all its readers. Implementations live with the outputs.
type Format interface {
	// Name keys the stream's feed of this format.
	Name() string
	// NewMuxer starts serialising a stream with these (ready) tracks.
	NewMuxer(tracks []*media.Track) (Muxer, error)
}

// Muxer serialises one stream into one format. It is called from the
// publisher's goroutine only, under the stream's lock.
type Muxer interface {
	// Header is what every reader receives before its first packet (the
	// FLV header and sequence headers, ftyp+moov).
	Header() []byte
	// Frame serialises a frame. ok is false when the frame yields nothing
	// now (a muxer that waits for the next frame to know a duration
	// returns the previous frame's bytes). The returned Data must never be
	// modified afterwards: readers' queues share it.
	Frame(f *media.Frame) (p Packet, ok bool)
}
