// Package rtspclient pulls RTSP streams: a Client for one session
// (DESCRIBE, SETUP over UDP or TCP interleaved, PLAY, with Digest or
// opted-in Basic authentication and RTCP receiver reports) and a Puller
// that keeps one reconnecting, falling back from UDP to TCP and following
// redirects.
//
// It knows nothing of the stream hub: a Puller hands its tracks and frames
// to callbacks. The wire format is mediaengine/rtsp's.
package rtspclient
