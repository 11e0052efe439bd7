package mediaengine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/recordplay"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRecordedPlayback records the demo stream in 2 s files and plays one
// back on the media port: on_play decides with the file's reserved stream
// name; the file answers Range requests (206, 416); a time-addressed
// request starts at a keyframe and ffprobe reads it; the control API
// deletes it, after which it is gone.
func TestRecordedPlayback(t *testing.T) {
	t.Parallel()
	rc, url := startHookReceiver(t)
	te := startEngine(t, func(c *engineapi.Config) { c.Hooks.URL = url })
	te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "live", Stream: "demo", SegmentSeconds: 2}, nil)
	testkit.Eventually(t, 30*time.Second, "a finished file", func() bool { return rc.count(engineapi.HookOnRecordMP4) >= 1 })
	var h engineapi.RecordMP4Hook
	rc.last(engineapi.HookOnRecordMP4, &h)
	base := te.mediaURL("/record/" + h.FileID + ".mp4")
	get := func(u string, header ...string) (int, http.Header, []byte) {
		req, _ := http.NewRequest("GET", u, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	if st, _, _ := get(base); st != 403 {
		t.Fatalf("without a ticket: %d", st)
	}
	var play engineapi.PlayHook
	rc.last(engineapi.HookOnPlay, &play)
	if play.Vhost != recordplay.RecordVhost || play.App != recordplay.RecordApp || play.Stream != h.FileID || play.Protocol != "http-fmp4" {
		t.Fatalf("on_play for a recorded file: %+v", play)
	}
	if st, _, b := get(base + "?svc_ticket=good"); st != 200 || int64(len(b)) != h.FileSize {
		t.Fatalf("whole file: %d, %d bytes of %d", st, len(b), h.FileSize)
	}
	if st, hd, b := get(base+"?svc_ticket=good", "Range", "bytes=100-199"); st != 206 || len(b) != 100 ||
		hd.Get("Content-Range") != fmt.Sprintf("bytes 100-199/%d", h.FileSize) {
		t.Fatalf("range: %d %v %d bytes", st, hd, len(b))
	}
	if st, _, _ := get(base+"?svc_ticket=good", "Range", fmt.Sprintf("bytes=%d-", h.FileSize+10)); st != 416 {
		t.Fatalf("range past the end: %d", st)
	}
	if st, _, _ := get(base + "?svc_ticket=good&start=abc"); st != 400 {
		t.Fatalf("bad start: %d", st)
	}
	if st, _, _ := get(base + "?svc_ticket=good&start=3600"); st != 416 {
		t.Fatalf("start past the end: %d", st)
	}
	st, _, part := get(base + "?svc_ticket=good&start=1&duration=0.5")
	if st != 200 || len(part) == 0 || int64(len(part)) > h.FileSize {
		t.Fatalf("time-addressed: %d, %d bytes", st, len(part))
	}
	p := mediaprobe.ProbeFile(t, base+"?svc_ticket=good&start=1&duration=0.5")
	v := p.Kind("video")
	if len(v) == 0 || !strings.Contains(v[0].Flags, "K") {
		t.Fatalf("the time-addressed answer does not start at a keyframe: %+v", v)
	}
	// HLS VOD: a playlist of byte ranges of the same file with the same
	// ticket; ffprobe reads every frame of the file through it.
	st, hd, pl := get(te.mediaURL("/record/" + h.FileID + ".m3u8?svc_ticket=good"))
	if st != 200 || hd.Get("Content-Type") != "application/vnd.apple.mpegurl" || !strings.Contains(string(pl), "#EXT-X-MAP:URI=\""+h.FileID+".mp4?svc_ticket=good\"") ||
		!strings.Contains(string(pl), "#EXT-X-ENDLIST") {
		t.Fatalf("playlist: %d %v\n%s", st, hd, pl)
	}
	if hp := mediaprobe.ProbeFile(t, te.mediaURL("/record/"+h.FileID+".m3u8?svc_ticket=good")); uint64(len(hp.Packets)) != h.Frames {
		t.Fatalf("ffprobe reads %d packets through the playlist, the file holds %d frames", len(hp.Packets), h.Frames)
	}
	if st, _, _ := get(te.mediaURL("/record/" + h.FileID + ".m3u8")); st != 403 {
		t.Fatalf("a playlist without a ticket: %d", st)
	}
	// A download asks on_play for the download app and answers an
	// attachment, whole or by Range; it takes no time span.
	st, hd, all := get(base + "?svc_ticket=good&download=1")
	rc.last(engineapi.HookOnPlay, &play)
	if st != 200 || int64(len(all)) != h.FileSize || !strings.HasPrefix(hd.Get("Content-Disposition"), `attachment; filename="`+h.FileName) ||
		play.App != recordplay.DownloadApp || play.Stream != h.FileID {
		t.Fatalf("download: %d %v %d bytes, on_play %+v", st, hd, len(all), play)
	}
	if st, _, b := get(base+"?svc_ticket=good&download=1", "Range", "bytes=10-"); st != 206 || int64(len(b)) != h.FileSize-10 {
		t.Fatalf("resumed download: %d, %d bytes", st, len(b))
	}
	for _, q := range []string{"&download=1&start=1", "&download=yes"} {
		if st, _, _ := get(base + "?svc_ticket=good" + q); st != 400 {
			t.Fatalf("%s: %d", q, st)
		}
	}
	if st, _, _ := get(te.mediaURL("/record/not-a-uuid.mp4?svc_ticket=good")); st != 404 {
		t.Fatalf("a bad id: %d", st)
	}
	var del engineapi.DeleteRecordFilesResult
	te.control(t, "POST", engineapi.PathRecordingFilesDelete, engineapi.DeleteRecordFilesRequest{FileIDs: []string{h.FileID, "01a20000-0000-7000-8000-000000000000"}}, &del)
	if b, _ := json.Marshal(del); len(del.Results) != 2 || !del.Results[0].Deleted || del.Results[1].Code != engineapi.CodeFileNotFound {
		t.Fatalf("delete: %s", b)
	}
	if st, _, _ := get(base + "?svc_ticket=good"); st != 404 {
		t.Fatalf("after delete: %d", st)
	}
}
