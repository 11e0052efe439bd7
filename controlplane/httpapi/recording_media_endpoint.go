package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/playback"
)

// Recorded files' bytes and links. The bytes live on the engine that
// recorded them; a control node answers GET .../media and .../download by
// reading the file from that engine's media port with a system ticket (the
// caller may be connected to any control node), passing Range and the
// conditional headers through, so the caller sees the engine's 200, 206
// or 304 as if the file were here.

// mediaClient reads recorded files from engines: no overall timeout (a
// download lasts as long as it lasts; the caller's request context ends
// it), but an engine must start answering promptly.
var mediaClient = &http.Client{Transport: &http.Transport{
	Proxy:                 nil,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	ResponseHeaderTimeout: 15 * time.Second,
	MaxIdleConnsPerHost:   8,
	IdleConnTimeout:       60 * time.Second,
}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// forwarded are the request headers a read passes to the engine, and
// relayed the answer's headers passed back.
var (
	forwarded = []string{"Range", "If-Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"}
	relayed   = []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified", "ETag", "Content-Disposition",
		"Cache-Control"}
)

// engineFile is a recorded file's answer from its engine, relayed as it is.
type engineFile struct{ resp *http.Response }

func (f engineFile) relay(w http.ResponseWriter) error {
	defer f.resp.Body.Close()
	for _, h := range relayed {
		if v := f.resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(f.resp.StatusCode)
	_, err := io.Copy(w, f.resp.Body)
	return err
}

func (f engineFile) VisitGetRecordingFileMediaResponse(w http.ResponseWriter) error {
	return f.relay(w)
}
func (f engineFile) VisitDownloadRecordingFileResponse(w http.ResponseWriter) error {
	return f.relay(w)
}
func (f engineFile) VisitGetCutMergeTaskMediaResponse(w http.ResponseWriter) error { return f.relay(w) }
func (f engineFile) VisitDownloadCutMergeTaskOutputResponse(w http.ResponseWriter) error {
	return f.relay(w)
}

// readFile asks the owning engine for a file, for action (play or
// download).
func (e *recordingEndpoints) readFile(ctx context.Context, fileID, action string) (engineFile, error) {
	_, u, err := e.recording.FileURL(requestContext(ctx), fileID, action)
	if err != nil {
		return engineFile{}, err
	}
	return readEngine(ctx, u, "recording_file_unavailable", "the recording file cannot be played")
}

// readEngine reads a recorded resource from its engine at u; only 200,
// 206 and 304 come back as they are. A refusal of the engine's on_play
// means the resource left its playable state meanwhile: 409 with code.
func readEngine(ctx context.Context, u, code, refused string) (engineFile, error) {
	rctx := requestContext(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return engineFile{}, err
	}
	if c := ginContext(ctx); c != nil {
		for _, h := range forwarded {
			if v := c.Request.Header.Get(h); v != "" {
				req.Header.Set(h, v)
			}
		}
	}
	resp, err := mediaClient.Do(req)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text would carry the URL, and with it the ticket
	}
	if err != nil {
		return engineFile{}, &Error{Status: http.StatusServiceUnavailable, Code: "agent_unavailable",
			Message: "the media server that holds the file cannot be reached; try again", Retryable: retryable(true), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusNotModified:
		return engineFile{resp: resp}, nil
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable:
		if c := ginContext(ctx); c != nil {
			c.Header("Content-Range", resp.Header.Get("Content-Range"))
		}
		return engineFile{}, newError(http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable", "the requested range lies outside the file")
	case http.StatusNotFound:
		return engineFile{}, newError(http.StatusNotFound, "not_found", "the media server no longer holds the file")
	case http.StatusForbidden:
		// The engine's on_play refused: the file left Completed meanwhile.
		return engineFile{}, newError(http.StatusConflict, code, refused)
	}
	return engineFile{}, &Error{Status: http.StatusServiceUnavailable, Code: "agent_unavailable",
		Message: "the media server that holds the file answered " + resp.Status + "; try again", Retryable: retryable(true)}
}

func (e *recordingEndpoints) GetRecordingFileMedia(ctx context.Context, r contract.GetRecordingFileMediaRequestObject) (contract.GetRecordingFileMediaResponseObject, error) {
	f, err := e.readFile(ctx, r.FileId, playback.ActionPlay)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *recordingEndpoints) DownloadRecordingFile(ctx context.Context, r contract.DownloadRecordingFileRequestObject) (contract.DownloadRecordingFileResponseObject, error) {
	f, err := e.readFile(ctx, r.FileId, playback.ActionDownload)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *recordingEndpoints) link(ctx context.Context, fileID, action string, lifetime *int32) (contract.ThirdPartyMediaLink, error) {
	l, err := e.recording.FileLink(requestContext(ctx), caller(ctx), fileID, action, intPtr(lifetime))
	if err != nil {
		return contract.ThirdPartyMediaLink{}, err
	}
	return toLink(l), nil
}

func toLink(l *playback.IssuedLink) contract.ThirdPartyMediaLink {
	return contract.ThirdPartyMediaLink{ResourceKind: contract.ThirdPartyMediaLinkResourceKind(l.ResourceKind), ResourceId: l.ResourceID,
		Action: contract.ThirdPartyMediaLinkAction(l.Action), Url: l.URL, ExpiresAt: l.ExpiresAt, SupportsRange: l.SupportsRange}
}

func (e *recordingEndpoints) CreateThirdPartyRecordingPlaybackLink(
	ctx context.Context, r contract.CreateThirdPartyRecordingPlaybackLinkRequestObject,
) (contract.CreateThirdPartyRecordingPlaybackLinkResponseObject, error) {
	l, err := e.link(ctx, r.FileId, playback.ActionPlay, r.Body.LifetimeSeconds)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyRecordingPlaybackLink200JSONResponse(l), nil
}

func (e *recordingEndpoints) CreateThirdPartyRecordingDownloadLink(
	ctx context.Context, r contract.CreateThirdPartyRecordingDownloadLinkRequestObject,
) (contract.CreateThirdPartyRecordingDownloadLinkResponseObject, error) {
	l, err := e.link(ctx, r.FileId, playback.ActionDownload, r.Body.LifetimeSeconds)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyRecordingDownloadLink200JSONResponse(l), nil
}
