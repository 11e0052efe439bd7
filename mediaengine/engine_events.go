package mediaengine

import (
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/shared/engineapi"
)

// schemas lists the protocols a ready stream is playable with, for
// on_stream_changed.
func (e *Engine) schemas() []string {
	return []string{"http-flv", "http-fmp4", "hls"}
}

// streamChanged sends on_stream_changed for a stream that became ready or
// ended.
func (e *Engine) streamChanged(s *hub.Stream, registered bool) {
	info := s.Info()
	h := engineapi.StreamChangedHook{StreamRef: streamRef(s.Path()), Registered: registered, Origin: info.Origin, OriginURL: info.OriginURL}
	if registered {
		h.Schemas, h.Tracks = e.schemas(), info.Tracks
	}
	e.hooks.Load().StreamChanged(h)
}

// noneReader sends on_stream_none_reader; if the control plane answers
// close, a pulled stream's proxy is removed and any other stream is closed.
func (e *Engine) noneReader(s *hub.Stream) {
	e.hooks.Load().StreamNoneReader(engineapi.StreamNoneReaderHook{StreamRef: streamRef(s.Path()), Origin: s.Origin().Kind}, func() {
		e.log.Info("closing a stream nobody watches, as on_stream_none_reader asked", zap.String("stream", s.Path().String()))
		if id, ok := e.proxies.ByPath(s.Path()); ok {
			e.proxies.Remove(id)
			return
		}
		s.Close()
	})
}
