// Package rtpcodec turns RTP packets into media.Frames and media.Frames back
// into RTP packets for the codecs the engine carries: H.264 (RFC 6184),
// H.265 (RFC 7798), AAC in mpeg4-generic (RFC 3640), G.711 A/U-law
// (RFC 3551) and Opus (RFC 7587).
//
// It knows nothing of RTSP or of the stream hub: an input hands it packets
// in sequence order (ReorderBuffer puts UDP packets back in order and counts
// losses) and receives complete access units through a callback; an output
// hands it frames and receives ready-to-send packets.
//
// Timestamps: each track's Timeline unwraps the 32-bit RTP clock, places
// the track on the stream's common origin (StreamClock, aligned by RTCP
// sender reports when the source sends them) and repairs jumps, so every
// Frame's PTS is an offset from one origin shared by all tracks of the
// stream. Video DTS comes from DTSEstimator (see there for why a reorder
// window and not the slice header's POC).
//
// Hot path discipline: depacketising and packetising reuse their buffers;
// the only allocations are the ones a published Frame needs to own its
// bytes (one slab per access unit), because the hub keeps frames in its GOP
// cache and shares them between readers.
package rtpcodec
