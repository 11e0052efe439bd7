// Package rtspserver is the engine's RTSP server: it accepts pushed
// streams (ANNOUNCE/RECORD) and serves them (DESCRIBE/SETUP/PLAY/PAUSE)
// over TCP interleaved and UDP, with Digest authentication and
// ticket-carrying players.
//
// It knows nothing of the stream hub: it asks a Handler for a FrameWriter
// to publish into or a FrameSource to play from. The wire format is
// mediaengine/rtsp's; rtsptest.Relay is a small Handler for tests.
package rtspserver
