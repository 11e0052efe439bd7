// Package gbrtp receives the media of a GB/T 28181 device: RTP carrying
// an MPEG program stream on a port the agent leased, over UDP or TCP with
// RFC 4571 framing (the engine listening, "TCP passive", or dialling the
// device, "TCP active"). A Session checks the SSRC the INVITE announced and
// the source the first packet came from, puts UDP packets back in order,
// demuxes the program stream (package ps) and publishes the stream once
// its tracks are described. A session that receives nothing for its
// timeout ends with ErrTimeout (ZLMediaKit's on_rtp_server_timeout).
package gbrtp
