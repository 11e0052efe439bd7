// Package rtsp is the engine's RTSP wire layer (RFC 2326, with the RFC
// 7826 parts real peers use): the message reader and writer with
// interleaved binary frames, the Transport header, lenient SDP for real
// cameras, control URLs, status codes and errors, and the RTCP helpers the
// two ends share.
//
// The ends live beside it: rtspclient (Client and the reconnecting
// Puller) and the server that accepts pushed streams and serves them. This
// package imports neither, and none of them knows the stream hub. RTP
// payloads are handled by mediaengine/rtpcodec.
package rtsp
