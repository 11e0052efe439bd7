package mediaengine

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/shared/engineapi"
)

// rtspHandler connects the RTSP server to the engine: ANNOUNCE/RECORD
// publishes into the hub through on_publish, DESCRIBE/PLAY reads raw frames
// through on_play, both with the client's query parameters and, when the
// server authenticated it, its RTSP user.
type rtspHandler struct {
	e *Engine
}

// ProtocolRTSP names RTSP players and publishers in hooks and listings.
const ProtocolRTSP = "rtsp"

// userParam carries the RTSP user the server authenticated into the hook
// parameters; a client cannot set it (the query's own value is replaced).
const userParam = engineapi.RTSPUserParam

func hookParams(q url.Values, user string) map[string]string {
	out := make(map[string]string, len(q)+1)
	for k, v := range q {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	delete(out, userParam)
	if user != "" {
		out[userParam] = user
	}
	return out
}

func rtspRefusal(err error) error {
	switch {
	case errors.Is(err, ErrPlayDenied), errors.Is(err, ErrPublishDenied):
		return fmt.Errorf("%w: %w", rtsp.ErrForbidden, err)
	case errors.Is(err, hub.ErrStreamNotFound):
		return fmt.Errorf("%w: %w", rtsp.ErrNotFound, err)
	}
	return err
}

func (h rtspHandler) Publish(ctx context.Context, req *rtspserver.PublishRequest) (rtspserver.FrameWriter, error) {
	pub, err := h.e.Publish(ctx, req.Path, hub.Origin{Kind: "rtsp-push", RemoteAddr: req.ClientAddr.String()}, hookParams(req.Query, req.User), req.Tracks)
	if err != nil {
		return nil, rtspRefusal(err)
	}
	return publisherWriter{pub}, nil
}

// publisherWriter adapts a hub publisher to the RTSP server's writer.
type publisherWriter struct{ p *hub.Publisher }

func (w publisherWriter) WriteFrame(f *media.Frame) error { return w.p.WriteFrame(f) }
func (w publisherWriter) Close() error                    { w.p.Close(); return nil }

func (h rtspHandler) Play(ctx context.Context, req *rtspserver.PlayRequest) (rtspserver.FrameSource, error) {
	rd, leave, err := h.e.Play(ctx, req.Path, ProtocolRTSP, req.ClientAddr.String(), hookParams(req.Query, req.User))
	if err != nil {
		return nil, rtspRefusal(err)
	}
	return &readerSource{rd: rd, leave: leave}, nil
}

// readerSource adapts a raw hub reader to the RTSP server's frame source.
type readerSource struct {
	rd      *hub.Reader
	leave   func()
	pending []*hub.Packet
	buf     []*hub.Packet
}

func (s *readerSource) Tracks() []*media.Track { return s.rd.Tracks() }

func (s *readerSource) Next(ctx context.Context) (*media.Frame, error) {
	for len(s.pending) == 0 {
		var err error
		s.buf, err = s.rd.Next(ctx, s.buf[:0])
		if err != nil {
			return nil, err
		}
		s.pending = s.buf
	}
	f := s.pending[0].Frame
	s.pending[0] = nil
	s.pending = s.pending[1:]
	return f, nil
}

func (s *readerSource) Close() error {
	s.leave()
	return nil
}
