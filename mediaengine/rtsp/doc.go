// Package rtsp is the engine's RTSP (RFC 2326, with the RFC 7826 parts
// real peers use): the message reader and writer with interleaved binary
// frames, the Transport header, lenient SDP for real cameras, a Client and
// a reconnecting Puller for pulling streams, and a Server that accepts
// pushed streams (ANNOUNCE/RECORD) and serves them (DESCRIBE/SETUP/PLAY)
// over TCP interleaved and UDP.
//
// It knows nothing of the stream hub: a Puller hands its tracks and frames
// to callbacks, and the Server asks a Handler for a FrameWriter to publish
// into or a FrameSource to play from. RTP payloads are handled by
// mediaengine/rtpcodec.
package rtsp
