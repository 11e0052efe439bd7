package mediaengine

import (
	"net/http"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// listStreams answers GET /api/v1/streams?vhost=&app=&stream=.
func (e *Engine) listStreams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := engineapi.StreamList{Streams: []engineapi.StreamInfo{}}
	for _, s := range e.hub.Streams() {
		p := s.Path()
		if (q.Get("vhost") != "" && p.Vhost != q.Get("vhost")) || (q.Get("app") != "" && p.App != q.Get("app")) ||
			(q.Get("stream") != "" && p.Stream != q.Get("stream")) {
			continue
		}
		out.Streams = append(out.Streams, s.Info())
	}
	writeJSON(w, http.StatusOK, out)
}

// closeStream answers POST /api/v1/streams/close: the publisher is cut and
// the players disconnected. A pulled or demo stream reconnects by its own
// policy; remove the proxy to stop it for good.
func (e *Engine) closeStream(w http.ResponseWriter, r *http.Request) {
	var req engineapi.CloseStreamRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.App == "" || req.Stream == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "app and stream are required")
		return
	}
	s, ok := e.hub.Stream(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream})
	if !ok {
		writeError(w, http.StatusNotFound, engineapi.CodeStreamNotFound, "no live stream "+hub.Key(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream}).String())
		return
	}
	info := s.Info()
	s.Close()
	writeJSON(w, http.StatusOK, info)
}
