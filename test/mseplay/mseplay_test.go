package mseplay

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/chromium"
)

// TestPagePlaysFragmentedMP4: the page plays an fMP4 that ffmpeg made
// (H.264 + AAC, a fragment per keyframe), served from another origin,
// reports every stage in order, and reads a refusal's status.
func TestPagePlaysFragmentedMP4(t *testing.T) {
	if err := CheckChromium(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "clip.mp4")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi",
		"-i", "sine=frequency=440:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast", "-profile:v", "baseline",
		"-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov+default_base_moof", file).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg (Debian package ffmpeg): %v %s", err, out)
	}
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.URL.Path != "/clip.mp4" {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		http.ServeFile(w, r, file)
	}))
	defer media.Close()
	h, err := Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	browser := exec.Command(chromium.Path, h.BrowserArgs(filepath.Join(dir, "chromium"))...)
	var out strings.Builder
	browser.Stdout, browser.Stderr = &out, &out
	if err := browser.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { browser.Process.Kill(); browser.Wait() }()

	res, err := h.Play(Job{ID: 1, URL: media.URL + "/clip.mp4", PlaySeconds: 1, TimeoutMs: 60000}, 150*time.Second)
	if err != nil {
		t.Fatalf("%v\nChromium: %s", err, out.String())
	}
	// The first frame may come before the whole first fragment is
	// appended: Chromium decodes the samples of a partial append.
	stages := []float64{res.HeadersMs, res.FirstByteMs, res.InitMs, res.FragmentMs, res.AppendedMs}
	for i, s := range stages {
		if s <= 0 || (i > 0 && s < stages[i-1]) || res.FrameMs < res.InitMs {
			t.Fatalf("stages out of order or missing (headers, first byte, init, fragment, appended; frame %.1f): %v", res.FrameMs, stages)
		}
	}
	if !strings.HasPrefix(res.Codecs, "avc1.42") || !strings.HasSuffix(res.Codecs, ",mp4a.40.2") || res.Width != 320 || res.FramesDecoded < 2 ||
		res.Advanced < 1 || res.FragmentBytes == 0 {
		t.Fatalf("result %+v", res)
	}
	// An exact seek 2.5 s into the clip shows a frame there (this clip
	// starts at 0, so the first frame shown may be the one at 0), and the
	// clip read into memory first plays too.
	if res, err := h.Play(Job{ID: 2, URL: media.URL + "/clip.mp4", Exact: true, After: 2.5, TimeoutMs: 60000}, 90*time.Second); err != nil ||
		res.ExactMs < res.FrameMs || res.CurrentTime < 2.4 {
		t.Fatalf("exact seek: %+v %v", res, err)
	}
	if res, err := h.Play(Job{ID: 3, URL: media.URL + "/clip.mp4", Preload: true, TimeoutMs: 60000}, 90*time.Second); err != nil ||
		res.FrameMs <= 0 || res.HeadersMs != 0 {
		t.Fatalf("preloaded: %+v %v", res, err)
	}
	if _, err := h.Play(Job{ID: 4, URL: media.URL + "/other.mp4", TimeoutMs: 30000}, 90*time.Second); err == nil ||
		!strings.Contains(err.Error(), "GET answered 403") {
		t.Fatalf("a refused URL: %v", err)
	}
}
