package rtc

import (
	"context"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// postWHIP answers a publisher's offer (RFC 9725): the stream is admitted
// through on_publish with the tracks the answer negotiated, before the
// answer is sent, so a refused publisher gets 403 (or 409 when the stream
// has a publisher) and no media session.
func (s *Server) postWHIP(w http.ResponseWriter, r *http.Request) {
	path, params, ok := requestPath(w, r)
	if !ok {
		return
	}
	raw, err := readSDP(r, "application/sdp")
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := parseOffer(raw)
	if err != nil {
		writeError(w, err)
		return
	}
	if !o.sends {
		writeError(w, &Error{http.StatusBadRequest, "invalid_sdp", "a WHIP offer must send media (sendonly or sendrecv sections)"})
		return
	}
	id, err := s.reserve()
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	answerSDP, err := s.openWHIP(ctx, id, path, params, r.RemoteAddr, o, string(raw))
	if err != nil {
		s.release(id, false)
		s.log.Info("WHIP offer refused", zap.String("stream", path.String()), zap.String("remote", r.RemoteAddr), zap.Error(err))
		writeError(w, err)
		return
	}
	location := "/" + path.App + "/" + path.Stream + "/whip/" + id
	if path.Vhost != media.DefaultVhost {
		location += "?vhost=" + path.Vhost
	}
	h := w.Header()
	h.Set("Content-Type", "application/sdp")
	h.Set("Location", location)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answerSDP)
}

func (s *Server) openWHIP(ctx context.Context, id string, path media.Path, params map[string]string, remote string, o *offer,
	offerSDP string) (string, error) {
	pc, err := s.newPeerConnection(true)
	if err != nil {
		return "", err
	}
	answerSDP, err := answer(ctx, pc, offerSDP, true)
	if err != nil {
		_ = pc.Close()
		return "", err
	}
	formats, tracks, err := negotiatedTracks(o, answerSDP)
	if err != nil {
		_ = pc.Close()
		return "", err
	}
	params[SessionParam] = id
	pub, received, leave, err := s.host.Publish(ctx, path, hub.Origin{Kind: "whip", RemoteAddr: remote}, params, tracks)
	if err != nil {
		_ = pc.Close()
		return "", err
	}
	sctx, scancel := context.WithCancel(context.Background())
	sess := &whipSession{id: id, srv: s, p: path, pc: pc, pub: pub, received: received, leave: leave, formats: formats,
		clock: rtpcodec.NewStreamClock(), ctx: sctx, cancel: scancel, connected: make(chan struct{})}
	if !s.register(id, sess) {
		scancel()
		pub.Close()
		leave()
		_ = pc.Close()
		return "", ErrClosed
	}
	sess.start()
	s.log.Info("WHIP session started", zap.String("session", id), zap.String("stream", path.String()), zap.String("remote", remote),
		zap.Int("tracks", len(tracks)))
	return answerSDP, nil
}
