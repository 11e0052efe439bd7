package rtspserver

import (
	"context"
	"net"
	"net/url"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Handler is what the Server asks of the engine. Both calls happen once
// per session, before media flows, so they may consult hooks (on_publish,
// on_play with the svc_ticket from Query). Return rtsp.ErrNotFound,
// rtsp.ErrForbidden or rtsp.ErrUnauthorized (wrapped as you like) to choose the
// status the client sees.
type Handler interface {
	// Publish is asked when a client ANNOUNCEs a stream. The returned
	// FrameWriter receives its frames once RECORD starts, and is closed
	// when the session ends.
	Publish(ctx context.Context, req *PublishRequest) (FrameWriter, error)
	// Play is asked at DESCRIBE (or at SETUP for clients that skip it).
	// The FrameSource gives the tracks for the SDP and, after PLAY, the
	// frames; it is closed when the session ends.
	Play(ctx context.Context, req *PlayRequest) (FrameSource, error)
}

// FrameWriter takes a published stream's frames. WriteFrame is called
// from one goroutine at a time; an error ends the publishing session
// (the way to refuse or stop a publisher from the hub's side).
type FrameWriter interface {
	WriteFrame(f *media.Frame) error
	Close() error
}

// FrameSource gives a played stream's frames.
type FrameSource interface {
	// Tracks are the stream's tracks; the server announces them all.
	Tracks() []*media.Track
	// Next blocks until the next frame (of any track, in the stream's
	// order) or until ctx ends or the stream ends (an error).
	Next(ctx context.Context) (*media.Frame, error)
	Close() error
}

// SessionID names an RTSP session (the Session header's value); Kick
// takes it.
type SessionID string

// PublishRequest describes a client that wants to publish.
type PublishRequest struct {
	SessionID  SessionID
	Path       media.Path
	Tracks     []*media.Track
	Query      url.Values
	ClientAddr net.Addr
	// User is the authenticated user name ("" when the server has no
	// credentials configured).
	User string
}

// PlayRequest describes a client that wants to play.
type PlayRequest struct {
	SessionID  SessionID
	Path       media.Path
	Query      url.Values
	ClientAddr net.Addr
	User       string
}
