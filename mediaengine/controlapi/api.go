// Package controlapi is the media engine's loopback control API: how the
// node agent reads and changes a running engine (health, configuration,
// streams, players, pull proxies, GB28181 RTP servers, recordings, smoke
// tests). It decodes and checks each request, calls the engine's parts and
// maps their errors to the engineapi codes; it owns no state. Every route
// needs the engine's bearer control secret.
package controlapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/composite"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// Engine is what the API asks of the engine as a whole: the operations
// that span its parts or belong to its assembly.
type Engine interface {
	Health() engineapi.Health
	// Reload re-reads the configuration file.
	Reload() (engineapi.ConfigResult, error)
	Config() engineapi.Config
	// PutConfig validates, writes and applies a whole configuration; its
	// errors wrap ErrInvalidConfig when the configuration is refused.
	PutConfig(engineapi.Config) (engineapi.ConfigResult, error)
	Stats() engineapi.Stats
	// ForgetLease drops cached admissions of an ended lease.
	ForgetLease(leaseID string)
	// SmokeTestRTSP reads an RTSP URL until the first frame or ctx ends.
	SmokeTestRTSP(ctx context.Context, req engineapi.SmokeTestRequest) engineapi.SmokeTestResult
	RTPServers() []engineapi.RTPServerInfo
	// OpenRTPServer errors wrap ErrRTPServerInvalid or ErrRTPServerExists
	// when the request is refused.
	OpenRTPServer(engineapi.OpenRTPServerRequest) (engineapi.RTPServerInfo, error)
	CloseRTPServer(id string) error
	// ScanRecordFiles walks the recording root again.
	ScanRecordFiles() (engineapi.RecordFileScanResult, error)
}

// Errors an Engine returns for the API to map.
var (
	ErrInvalidConfig    = errors.New("invalid configuration")
	ErrRTPServerInvalid = errors.New("invalid RTP server request")
	ErrRTPServerExists  = errors.New("an RTP server already publishes that stream")
)

// Parts are the engine parts the API reads and changes directly.
type Parts struct {
	Engine  Engine
	Hub     *hub.Hub
	Players *player.Registry
	Proxies *proxy.Registry
	Records *recorder.Recorder
	// Composites renders meeting composites from Records' files.
	Composites *composite.Pool
	Log        *zap.Logger
}

type api struct{ Parts }

// Handler serves the control API to callers presenting secret.
func Handler(secret string, p Parts) http.Handler {
	a := &api{p}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+engineapi.PathHealth, a.health)
	mux.HandleFunc("POST "+engineapi.PathReload, a.reload)
	mux.HandleFunc("GET "+engineapi.PathStreams, a.listStreams)
	mux.HandleFunc("POST "+engineapi.PathStreamClose, a.closeStream)
	mux.HandleFunc("GET "+engineapi.PathPlayers, a.listPlayers)
	mux.HandleFunc("POST "+engineapi.PathPlayersKick, a.kickPlayers)
	mux.HandleFunc("GET "+engineapi.PathProxies, a.listProxies)
	mux.HandleFunc("POST "+engineapi.PathProxies, a.addProxy)
	mux.HandleFunc("DELETE "+engineapi.PathProxy, a.removeProxy)
	mux.HandleFunc("GET "+engineapi.PathConfig, a.getConfig)
	mux.HandleFunc("PUT "+engineapi.PathConfig, a.putConfig)
	mux.HandleFunc("GET "+engineapi.PathStats, a.stats)
	mux.HandleFunc("POST "+engineapi.PathSmokeTestRTSP, a.smokeTestRTSP)
	mux.HandleFunc("GET "+engineapi.PathRTPServers, a.listRTPServers)
	mux.HandleFunc("POST "+engineapi.PathRTPServers, a.openRTPServer)
	mux.HandleFunc("DELETE "+engineapi.PathRTPServer, a.closeRTPServer)
	mux.HandleFunc("GET "+engineapi.PathRecordings, a.listRecordings)
	mux.HandleFunc("POST "+engineapi.PathRecordings, a.startRecording)
	mux.HandleFunc("POST "+engineapi.PathRecordingStop, a.stopRecording)
	mux.HandleFunc("POST "+engineapi.PathRecordingFilesDelete, a.deleteRecordFiles)
	mux.HandleFunc("POST "+engineapi.PathRecordingCutMerge, a.cutMerge)
	mux.HandleFunc("POST "+engineapi.PathRecordingComposite, a.renderComposite)
	mux.HandleFunc("POST "+engineapi.PathRecordingFilesScan, a.scanRecordFiles)
	mux.HandleFunc("POST "+engineapi.PathRecordingRootProbe, a.probeRecordingRoot)
	mux.HandleFunc("POST "+engineapi.PathRecordingFallbackRecover, a.recoverFallback)
	mux.HandleFunc("POST "+engineapi.PathRecordingBrowse, a.browseRecordings)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, engineapi.CodeNotFound, "no such control API route: "+r.Method+" "+r.URL.Path)
	})
	return authorized(secret, mux)
}

func authorized(secret string, next http.Handler) http.Handler {
	want := []byte("Bearer " + secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, engineapi.CodeUnauthorized, "the control API needs the engine's control secret")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *api) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.Engine.Health())
}

func (a *api) reload(w http.ResponseWriter, _ *http.Request) {
	res, err := a.Engine.Reload()
	if err != nil {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidConfig, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (a *api) getConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.Engine.Config())
}

// putConfig answers PUT /api/v1/config: the body is decoded over the
// running configuration (fields left out keep their values), validated,
// written to the file and applied.
func (a *api) putConfig(w http.ResponseWriter, r *http.Request) {
	next := a.Engine.Config()
	if !decodeBody(w, r, &next) {
		return
	}
	res, err := a.Engine.PutConfig(next)
	switch {
	case errors.Is(err, ErrInvalidConfig):
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidConfig, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

func (a *api) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.Engine.Stats())
}

// decodeBody reads a JSON body strictly: unknown fields and trailing data
// are errors, so a typo in a request is not silently ignored.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
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
