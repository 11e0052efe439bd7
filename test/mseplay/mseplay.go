// Package mseplay is a browser player of recorded fMP4 answers for tests
// and benchmarks: a page that plays a URL through Media Source Extensions
// in headless Chromium and reports, per play, where the time to its first
// frame went (server headers and first byte, init segment, first
// fragment, its append, the first presented frame).
//
// The page runs jobs in turn: a Harness serves it on loopback, hands it
// one Job at a time and returns its Result, so one browser runs many
// plays (its start-up is not a player's time to first frame). The media
// URL is another origin (the engine's media port, which answers
// Access-Control-Allow-Origin: *).
package mseplay

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/svcplatform/svc/test/peers/chromium"
)

// Page is the player page.
//
//go:embed page.html
var Page string

// Job is one play.
type Job struct {
	ID  int    `json:"id"`
	URL string `json:"url"`
	// Start is the requested time in the file (seconds), for the record.
	// The page shows the answer's first frame (the keyframe at or before
	// Start); with Exact it seeks After seconds past it (to Start: the
	// frames from the keyframe to it are decoded and not shown).
	Start float64 `json:"start"`
	Exact bool    `json:"exact"`
	After float64 `json:"after"`
	// Preload reads the whole answer before the clock starts and appends
	// it from memory (give URL a short &duration=): the browser's own
	// time, without the server and HTTP.
	Preload bool `json:"preload"`
	// PlaySeconds, when set, plays on after the first frame until
	// currentTime has advanced that far.
	PlaySeconds float64 `json:"playSeconds"`
	TimeoutMs   int     `json:"timeoutMs"`
}

// Result is what the page measured, times in milliseconds from the
// request (absent ones are zero).
type Result struct {
	ID    int    `json:"id"`
	Error string `json:"error"`
	// Headers: the response's headers; FirstByte: its first body bytes;
	// Init: the moov is in (the SourceBuffer is made); Fragment: the
	// first moof and its whole mdat are in; Appended: they are appended;
	// Frame: the first frame is presented; Exact: the first frame at the
	// exact seek's point.
	HeadersMs     float64 `json:"headersMs"`
	FirstByteMs   float64 `json:"firstByteMs"`
	InitMs        float64 `json:"initMs"`
	FragmentMs    float64 `json:"fragmentMs"`
	AppendedMs    float64 `json:"appendedMs"`
	FrameMs       float64 `json:"frameMs"`
	ExactMs       float64 `json:"exactMs"`
	FragmentBytes int     `json:"fragmentBytes"`
	Codecs        string  `json:"codecs"`
	// FrameMediaTime is the first frame's media time, BufferedStart where
	// the appended media began (seconds).
	FrameMediaTime float64 `json:"frameMediaTime"`
	BufferedStart  float64 `json:"bufferedStart"`
	CurrentTime    float64 `json:"currentTime"`
	Advanced       float64 `json:"advanced"`
	FramesDecoded  int     `json:"framesDecoded"`
	FramesDropped  int     `json:"framesDropped"`
	Width          int     `json:"width"`
	Height         int     `json:"height"`
}

// Harness serves the page and passes jobs and results between the
// caller and the page.
type Harness struct {
	// URL is the page's address.
	URL     string
	srv     *http.Server
	jobs    chan Job
	results chan Result
	closed  chan struct{}
	once    sync.Once
}

// Serve starts a harness on a loopback port.
func Serve() (*Harness, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &Harness{URL: "http://" + ln.Addr().String() + "/", jobs: make(chan Job), results: make(chan Result, 16), closed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, Page)
	})
	mux.HandleFunc("GET /next", h.next)
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		var res Result
		if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
			res.Error = "undecodable result: " + err.Error()
		}
		select {
		case h.results <- res:
		default: // a late result of a job given up on
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h.srv = &http.Server{Handler: mux}
	go h.srv.Serve(ln)
	return h, nil
}

// next answers the page's next job, {"wait":true} after a while without
// one (the page asks again) and {"done":true} once the harness is closed.
func (h *Harness) next(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	select {
	case j := <-h.jobs:
		json.NewEncoder(w).Encode(j)
	case <-h.closed:
		io.WriteString(w, `{"done":true}`)
	case <-r.Context().Done():
	case <-time.After(20 * time.Second):
		io.WriteString(w, `{"wait":true}`)
	}
}

// Play has the page play j and waits for its result, within the job's
// timeout plus a margin for a loaded machine (the page must first be
// loaded: allow Chromium's start on the first call).
func (h *Harness) Play(j Job, within time.Duration) (Result, error) {
	// Drop a late result of an earlier job.
	select {
	case <-h.results:
	default:
	}
	select {
	case h.jobs <- j:
	case <-time.After(within):
		return Result{}, errors.New("mseplay: the page did not ask for a job (is Chromium running on it?)")
	}
	for deadline := time.After(within); ; {
		select {
		case res := <-h.results:
			if res.ID != j.ID {
				continue
			}
			if res.Error != "" {
				return res, fmt.Errorf("mseplay: %s (%+v)", res.Error, res)
			}
			return res, nil
		case <-deadline:
			return Result{}, fmt.Errorf("mseplay: no result for %s within %s", j.URL, within)
		}
	}
}

// Close tells the page it is done and stops serving.
func (h *Harness) Close() {
	h.once.Do(func() {
		close(h.closed)
		time.AfterFunc(time.Second, func() { h.srv.Close() })
	})
}

// BrowserArgs are headless Chromium's arguments to open the page with a
// profile in userDataDir.
func (h *Harness) BrowserArgs(userDataDir string) []string {
	return chromium.Args(userDataDir, h.URL, "--autoplay-policy=no-user-gesture-required", "--disable-background-timer-throttling",
		"--disable-renderer-backgrounding")
}

// CheckChromium fails when Debian's Chromium is not installed.
func CheckChromium() error {
	if _, err := os.Stat(chromium.Path); err != nil {
		return fmt.Errorf("%s is required (Debian package chromium; scripts/install-deps.sh test installs it): %w", chromium.Path, err)
	}
	return nil
}
