package mediaengine

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/engineapi"
)

// maxControlBody bounds a control API request body.
const maxControlBody = 1 << 20

// controlRoutes is the loopback control API; every route needs the bearer
// secret (authorized).
func (e *Engine) controlRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+engineapi.PathHealth, e.health)
	mux.HandleFunc("POST "+engineapi.PathReload, e.reload)
	mux.HandleFunc("GET "+engineapi.PathStreams, e.listStreams)
	mux.HandleFunc("POST "+engineapi.PathStreamClose, e.closeStream)
	mux.HandleFunc("GET "+engineapi.PathPlayers, e.listPlayers)
	mux.HandleFunc("POST "+engineapi.PathPlayersKick, e.kickPlayers)
	mux.HandleFunc("GET "+engineapi.PathProxies, e.listProxies)
	mux.HandleFunc("POST "+engineapi.PathProxies, e.addProxy)
	mux.HandleFunc("DELETE "+engineapi.PathProxy, e.removeProxy)
	mux.HandleFunc("GET "+engineapi.PathConfig, e.getConfig)
	mux.HandleFunc("PUT "+engineapi.PathConfig, e.putConfig)
	mux.HandleFunc("GET "+engineapi.PathStats, e.stats)
	mux.HandleFunc("POST "+engineapi.PathSmokeTestRTSP, e.smokeTestRTSP)
	mux.HandleFunc("GET "+engineapi.PathRTPServers, e.listRTPServers)
	mux.HandleFunc("POST "+engineapi.PathRTPServers, e.openRTPServer)
	mux.HandleFunc("DELETE "+engineapi.PathRTPServer, e.closeRTPServer)
	mux.HandleFunc("GET "+engineapi.PathRecordings, e.listRecordings)
	mux.HandleFunc("POST "+engineapi.PathRecordings, e.startRecording)
	mux.HandleFunc("POST "+engineapi.PathRecordingStop, e.stopRecording)
	mux.HandleFunc("POST "+engineapi.PathRecordingFilesDelete, e.deleteRecordFiles)
	mux.HandleFunc("POST "+engineapi.PathRecordingCutMerge, e.cutMerge)
	mux.HandleFunc("POST "+engineapi.PathRecordingComposite, e.renderComposite)
	mux.HandleFunc("POST "+engineapi.PathRecordingFilesScan, e.scanRecordFiles)
	mux.HandleFunc("POST "+engineapi.PathRecordingRootProbe, e.probeRecordingRoot)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, engineapi.CodeNotFound, "no such control API route: "+r.Method+" "+r.URL.Path)
	})
	return e.authorized(mux)
}

func (e *Engine) authorized(next http.Handler) http.Handler {
	want := []byte("Bearer " + e.secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, engineapi.CodeUnauthorized, "the control API needs the engine's control secret")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (e *Engine) health(w http.ResponseWriter, _ *http.Request) {
	cfg := e.cfg.Load()
	writeJSON(w, http.StatusOK, engineapi.Health{Status: "ok", PID: os.Getpid(), Version: buildinfo.Version,
		MediaServerID: cfg.MediaServerID, StartedAt: e.startedAt, Streams: e.readyStreams(), Players: e.players.Len(), Proxies: e.proxies.Len()})
}

// readyStreams counts the streams on_stream_changed has reported: the
// control plane compares it with the sessions it holds Online.
func (e *Engine) readyStreams() int {
	n := 0
	for _, s := range e.hub.Streams() {
		if s.IsReady() {
			n++
		}
	}
	return n
}

func (e *Engine) reload(w http.ResponseWriter, _ *http.Request) {
	res, err := e.Reload()
	if err != nil {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidConfig, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// decodeBody reads a JSON body strictly: unknown fields and trailing data
// are errors, so a typo in a request is not silently ignored.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "request body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "request body: trailing data after the JSON value")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, engineapi.Error{Code: code, Message: msg})
}
