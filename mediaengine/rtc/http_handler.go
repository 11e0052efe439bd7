package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Mux is where the server's routes go (the media HTTP server's mux).
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Routes registers the signalling endpoints:
//
//	POST   /{app}/{stream}/whep            SDP offer in, SDP answer out (201, Location)
//	PATCH  /{app}/{stream}/whep/{session}  trickle ICE (application/trickle-ice-sdpfrag)
//	DELETE /{app}/{stream}/whep/{session}  leave
//	GET    /{app}/{stream}/player          a minimal WHEP player page
//
// and the same under /whip for publishers. The query (vhost, svc_ticket)
// goes to the hooks as for every other player.
func (s *Server) Routes(mux Mux) {
	mux.HandleFunc("POST /{app}/{stream}/whep", s.postWHEP)
	mux.HandleFunc("PATCH /{app}/{stream}/whep/{session}", s.patchSession)
	mux.HandleFunc("DELETE /{app}/{stream}/whep/{session}", s.deleteSession)
	mux.HandleFunc("GET /{app}/{stream}/player", s.servePlayer)
	mux.HandleFunc("POST /{app}/{stream}/whip", s.postWHIP)
	mux.HandleFunc("PATCH /{app}/{stream}/whip/{session}", s.patchSession)
	mux.HandleFunc("DELETE /{app}/{stream}/whip/{session}", s.deleteSession)
}

// answerTimeout bounds the work of one offer (hooks, waiting for the
// stream, negotiation).
const answerTimeout = 10 * time.Second

func (s *Server) postWHEP(w http.ResponseWriter, r *http.Request) {
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
	if !o.recvs {
		writeError(w, &Error{http.StatusBadRequest, "invalid_sdp", "a WHEP offer must receive media (recvonly or sendrecv sections)"})
		return
	}
	id, err := s.reserve()
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	sess, answerSDP, err := s.openWHEP(ctx, id, path, params, r.RemoteAddr, o, string(raw))
	if err != nil {
		s.release(id, false)
		s.log.Info("WHEP offer refused", zap.String("stream", path.String()), zap.String("remote", r.RemoteAddr), zap.Error(err))
		writeError(w, err)
		return
	}
	location := "/" + path.App + "/" + path.Stream + "/whep/" + id
	if path.Vhost != media.DefaultVhost {
		location += "?vhost=" + path.Vhost
	}
	h := w.Header()
	h.Set("Content-Type", "application/sdp")
	h.Set("Location", location)
	h.Set("Cache-Control", "no-store")
	for _, n := range sess.notes {
		h.Add("X-Svc-Note", n)
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answerSDP)
}

func (s *Server) openWHEP(ctx context.Context, id string, path media.Path, params map[string]string, remote string, o *offer,
	offerSDP string) (*whepSession, string, error) {
	// The player carries the session's id as its viewer id, so the flow
	// report of its end names the WHEP resource the control plane knows
	// (a room subscription then ends with it).
	params[SessionParam] = id
	rd, sent, leave, err := s.host.Play(ctx, path, rtpFormat{}, Protocol, remote, params)
	if err != nil {
		return nil, "", err
	}
	pc, err := s.newPeerConnection(false)
	if err != nil {
		leave()
		return nil, "", err
	}
	sctx, scancel := context.WithCancel(context.Background())
	sess := &whepSession{id: id, srv: s, p: path, pc: pc, rd: rd, sent: sent, leave: leave, ctx: sctx, cancel: scancel, connected: make(chan struct{})}
	fail := func(err error) (*whepSession, string, error) {
		scancel()
		leave()
		_ = pc.Close()
		sess.wg.Wait()
		return nil, "", err
	}
	if err := sess.setup(o); err != nil {
		return fail(err)
	}
	answerSDP, err := answer(ctx, pc, offerSDP, false)
	if err != nil {
		return fail(err)
	}
	if !s.register(id, sess) {
		return fail(ErrClosed)
	}
	sess.start()
	s.log.Info("WHEP session started", zap.String("session", id), zap.String("stream", path.String()), zap.String("remote", remote),
		zap.Strings("notes", sess.notes))
	return sess, answerSDP, nil
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	path, _, ok := requestPath(w, r)
	if !ok {
		return
	}
	ss, err := s.lookup(r.PathValue("session"), path)
	if err != nil {
		writeError(w, err)
		return
	}
	raw, err := readSDP(r, "application/trickle-ice-sdpfrag")
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := parseFragment(raw)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := ss.addCandidates(f); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	path, _, ok := requestPath(w, r)
	if !ok {
		return
	}
	ss, err := s.lookup(r.PathValue("session"), path)
	if err != nil {
		writeError(w, err)
		return
	}
	ss.close(nil)
	w.WriteHeader(http.StatusOK)
}

// requestPath reads the stream path and the hook parameters of a
// signalling request, answering it when they are invalid.
func requestPath(w http.ResponseWriter, r *http.Request) (media.Path, map[string]string, bool) {
	q := r.URL.Query()
	path := hub.Key(media.Path{Vhost: q.Get("vhost"), App: r.PathValue("app"), Stream: r.PathValue("stream")})
	if !validName(path.App) || !validName(path.Stream) || !validName(path.Vhost) {
		writeError(w, &Error{http.StatusBadRequest, "invalid_path", "app and stream are 1-128 letters, digits, '-', '_' or '.'"})
		return path, nil, false
	}
	params := make(map[string]string, len(q))
	for k, v := range q {
		if len(v) > 0 {
			params[k] = v[0]
		}
	}
	return path, params, true
}

// readSDP reads a body of content type want, bounded by maxSDPSize.
func readSDP(r *http.Request, want string) ([]byte, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.EqualFold(ct, want) {
		if want == "application/sdp" {
			return nil, ErrUnsupportedMediaType
		}
		return nil, &Error{http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be " + want}
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxSDPSize+1))
	if err != nil {
		return nil, &Error{http.StatusBadRequest, "invalid_sdp", "the body could not be read"}
	}
	if len(raw) > maxSDPSize {
		return nil, ErrBodyTooLarge
	}
	return raw, nil
}

// validName keeps app and stream names to what URLs, logs and file names
// carry safely (as the media HTTP server does).
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// writeError answers with the engine's error body; an error that is not
// an *Error is an internal one and its text is not shown.
func writeError(w http.ResponseWriter, err error) {
	e, ok := asError(err)
	if !ok {
		e = &Error{http.StatusInternalServerError, "internal", "the session could not be set up"}
		if errors.Is(err, context.DeadlineExceeded) {
			e = &Error{http.StatusGatewayTimeout, "timeout", "the session could not be set up in time"}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(engineapi.Error{Code: e.Code, Message: e.Msg})
}
