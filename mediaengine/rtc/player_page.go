package rtc

import (
	_ "embed"
	"net/http"
)

// playerPage is a minimal WHEP player for one stream, served at
// /{app}/{stream}/player until the console plays WebRTC itself: open it
// with the same query a WHEP URL takes (svc_ticket, vhost).
//
//go:embed player.html
var playerPage []byte

func (s *Server) servePlayer(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := requestPath(w, r); !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; media-src 'self' blob:")
	_, _ = w.Write(playerPage)
}
