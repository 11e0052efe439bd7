package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// fileProbe is what ffprobe decodes of a recorded file: frames counted per
// stream kind, codecs and the container's duration.
type fileProbe struct {
	videoFrames, audioFrames int
	videoCodec, audioCodec   string
	duration                 float64
}

func probeFile(t *testing.T, path string) fileProbe {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries",
		"stream=codec_type,codec_name,nb_read_frames:format=duration,start_time", "-of", "json", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe %s: %v: %s", path, err, tail(string(out), 400))
	}
	var doc struct {
		Streams []struct {
			CodecType    string `json:"codec_type"`
			CodecName    string `json:"codec_name"`
			NbReadFrames string `json:"nb_read_frames"`
		}
		Format struct {
			Duration  string
			StartTime string `json:"start_time"`
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	var p fileProbe
	for _, s := range doc.Streams {
		n, _ := strconv.Atoi(s.NbReadFrames)
		switch s.CodecType {
		case "video":
			p.videoFrames, p.videoCodec = n, s.CodecName
		case "audio":
			p.audioFrames, p.audioCodec = n, s.CodecName
		}
	}
	// Files keep the stream's own timeline, so a file starts where the
	// previous one ended; the container's duration counts from zero.
	d, _ := strconv.ParseFloat(doc.Format.Duration, 64)
	start, _ := strconv.ParseFloat(doc.Format.StartTime, 64)
	p.duration = d - start
	return p
}

// get fetches u with optional header pairs and returns the status, the
// headers and the body.
func get(t *testing.T, u, token string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

type mediaLink struct {
	ResourceKind, ResourceID, Action, URL string
	ExpiresAt                             time.Time
	SupportsRange                         bool
}

// TestRecordedFileMediaAndLinksEndToEnd: ffmpeg pushes 8 s of H.264 + AAC
// over RTSP into a real engine that records it in 2 s files; every video
// frame published is in the files ffprobe decodes after downloading them
// through GET /api/v2/recording/files/{fileId}/download (an attachment
// with the file's name). GET .../media plays with Range (206, 416 with the
// contract's error). The third-party playback-link and download-link give
// URLs on the media server bound to their action and file; a file
// soft-deleted refuses its links and its media until restored, and a
// hard-deleted one for good. Each operation needs its own permission.
func TestRecordedFileMediaAndLinksEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	var servers struct {
		Rows []struct{ RtspAddr string }
	}
	if st := cp.call("GET", "/api/v2/third-party/media-servers", nil, &servers); st != 200 || len(servers.Rows) != 1 {
		t.Fatalf("media servers: %d %+v", st, servers)
	}
	if st := cp.call("POST", "/api/v2/security/rtsp-auth", map[string]any{"mediaServerId": "media-1", "username": "encoder", "password": "encoder-Pa55word"}, nil); st != 200 {
		t.Fatalf("RTSP credential: %d", st)
	}
	manager := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.delete")}
	if st, body := manager.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "enc",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	const seconds, fps = 8, 25
	push := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/enc", seconds)
	if err := push.Wait(); err != nil {
		t.Fatalf("ffmpeg push: %v", err)
	}
	// The stream ended: its last file closes and is reported.
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 60*time.Second, "every file of the push indexed", func() bool {
		manager.call("GET", "/api/v2/recording/files?streamId=enc&pageSize=100", nil, &files)
		var ms int64
		for _, f := range files.Rows {
			ms += f.DurationMs
		}
		return files.Total >= 3 && ms >= (seconds-1)*1000
	})
	player := cp.newToken("recordings.play")
	downloader := cp.newToken("recordings.download")
	viewer := cp.newToken("recordings.view")
	api := cp.api + "/api/v2/recording/files/"

	// Download every file through the control plane and decode it.
	dir := t.TempDir()
	frames := 0
	for i, f := range files.Rows {
		st, hd, body := get(t, api+f.FileID+"/download", downloader)
		if st != 200 || int64(len(body)) != f.FileSize || hd.Get("Content-Type") != "video/mp4" ||
			hd.Get("Content-Disposition") != `attachment; filename="`+f.FileName+`"` {
			t.Fatalf("download of file %d: %d %v, %d bytes of %d", i, st, hd, len(body), f.FileSize)
		}
		path := filepath.Join(dir, f.FileName)
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		p := probeFile(t, path)
		// The index's duration is the video's: one frame per 40 ms; the
		// container's also spans the audio and the B-frames' delay.
		if want := int(f.DurationMs * fps / 1000); p.videoCodec != "h264" || p.audioCodec != "aac" || p.audioFrames == 0 ||
			p.videoFrames < want-1 || p.videoFrames > want+1 || p.duration < float64(f.DurationMs)/1000-0.1 || p.duration > float64(f.DurationMs)/1000+0.5 {
			t.Fatalf("file %d decodes as %+v; indexed as %d ms", i, p, f.DurationMs)
		}
		frames += p.videoFrames
	}
	if frames != seconds*fps {
		t.Fatalf("the files hold %d video frames; ffmpeg published %d", frames, seconds*fps)
	}

	// Media with Range, and the permissions of each operation.
	f := files.Rows[1]
	if st, hd, body := get(t, api+f.FileID+"/media", player); st != 200 || int64(len(body)) != f.FileSize || hd.Get("Accept-Ranges") != "bytes" ||
		hd.Get("Content-Disposition") != "" {
		t.Fatalf("media: %d %v, %d bytes", st, hd, len(body))
	}
	if st, hd, body := get(t, api+f.FileID+"/media", player, "Range", "bytes=100-1123"); st != 206 || len(body) != 1024 ||
		hd.Get("Content-Range") != fmt.Sprintf("bytes 100-1123/%d", f.FileSize) {
		t.Fatalf("media range: %d %v, %d bytes", st, hd, len(body))
	}
	if st, hd, body := get(t, api+f.FileID+"/media", player, "Range", fmt.Sprintf("bytes=%d-", f.FileSize+5)); st != 416 ||
		!strings.Contains(string(body), "range_not_satisfiable") || hd.Get("Content-Range") != fmt.Sprintf("bytes */%d", f.FileSize) {
		t.Fatalf("media range past the end: %d %v %s", st, hd, body)
	}
	for _, c := range []struct{ path, token string }{{"/media", viewer}, {"/media", downloader}, {"/download", player}, {"/download", viewer}} {
		if st, _, body := get(t, api+f.FileID+c.path, c.token); st != 403 || !strings.Contains(string(body), "permission_denied") {
			t.Fatalf("%s with the wrong permission: %d %s", c.path, st, body)
		}
	}
	if st, _, _ := get(t, api+"01a20000-0000-7000-8000-000000000000/media", player); st != 404 {
		t.Fatalf("media of a file that does not exist: %d", st)
	}

	// The third-party links.
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.play", "recordings.download")}
	var play, down mediaLink
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/playback-link", map[string]any{"lifetimeSeconds": 60}, &play); st != 200 ||
		play.Action != "play" || play.ResourceKind != "recording-file" || play.ResourceID != f.FileID || !play.SupportsRange ||
		time.Until(play.ExpiresAt) > 61*time.Second || !strings.Contains(play.URL, "/record/"+f.FileID+".mp4?svc_ticket=") {
		t.Fatalf("playback link: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/download-link", map[string]any{}, &down); st != 200 ||
		down.Action != "download" || time.Until(down.ExpiresAt) < 110*time.Second {
		t.Fatalf("download link: %d %s", st, body)
	}
	for _, bad := range []struct {
		path string
		body any
		want int
	}{
		{"/api/v2/third-party/recordings/" + f.FileID + "/playback-link", map[string]any{"lifetimeSeconds": 10}, 400},
		{"/api/v2/third-party/recordings/01a20000-0000-7000-8000-000000000000/playback-link", map[string]any{}, 404},
		{"/api/v2/third-party/recordings/" + f.FileID + "/download-link", map[string]any{"protocols": []string{"hls"}}, 400},
	} {
		if st, body := be.call("POST", bad.path, bad.body, nil); st != bad.want {
			t.Fatalf("%s %v: %d %s, want %d", bad.path, bad.body, st, body, bad.want)
		}
	}
	onlyPlay := backend{t: t, api: cp.api, token: player}
	if st, _ := onlyPlay.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/download-link", map[string]any{}, nil); st != 403 {
		t.Fatalf("a download link with recordings.play only: %d", st)
	}
	// The playback link plays (ffprobe, then Range requests of the same
	// client) and never downloads; the download link downloads the file
	// as an attachment and never plays.
	if p := probeFile(t, play.URL); p.videoCodec != "h264" || p.videoFrames == 0 {
		t.Fatalf("ffprobe of the playback link: %+v", p)
	}
	if st, _, body := get(t, play.URL, "", "Range", "bytes=0-99"); st != 206 || len(body) != 100 {
		t.Fatalf("a range of the playback link: %d, %d bytes", st, len(body))
	}
	if st, _, _ := get(t, play.URL+"&download=1", ""); st != 403 {
		t.Fatalf("the playback link as a download: %d", st)
	}
	if st, _, _ := get(t, strings.Replace(play.URL, f.FileID, files.Rows[0].FileID, 1), ""); st != 403 {
		t.Fatalf("the playback link on another file: %d", st)
	}
	if st, hd, body := get(t, down.URL, ""); st != 200 || int64(len(body)) != f.FileSize ||
		!strings.HasPrefix(hd.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the download link: %d %v, %d bytes", st, hd, len(body))
	}
	asPlay, _ := url.Parse(down.URL)
	q := asPlay.Query()
	q.Del("download")
	asPlay.RawQuery = q.Encode()
	if st, _, _ := get(t, asPlay.String(), ""); st != 403 {
		t.Fatalf("the download link as playback: %d", st)
	}

	// Soft delete: links and media refused, no new link; restore: back.
	type batch struct {
		Results []struct {
			Success bool
			Code    string
		}
	}
	var br batch
	if st, body := manager.call("POST", "/api/v2/third-party/recordings/soft-delete", map[string]any{"fileIds": []string{f.FileID}}, &br); st != 200 ||
		!br.Results[0].Success {
		t.Fatalf("soft delete: %d %s", st, body)
	}
	if st, _, _ := get(t, play.URL, ""); st != 403 {
		t.Fatalf("the playback link of a soft-deleted file: %d", st)
	}
	if st, _, body := get(t, api+f.FileID+"/media", player); st != 409 || !strings.Contains(string(body), "recording_file_unavailable") {
		t.Fatalf("media of a soft-deleted file: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/playback-link", map[string]any{}, nil); st != 409 {
		t.Fatalf("a link to a soft-deleted file: %d %s", st, body)
	}
	if st, body := manager.call("POST", "/api/v2/third-party/recordings/restore", map[string]any{"fileIds": []string{f.FileID}}, &br); st != 200 ||
		!br.Results[0].Success {
		t.Fatalf("restore: %d %s", st, body)
	}
	if st, _, _ := get(t, play.URL, "", "Range", "bytes=0-99"); st != 206 {
		t.Fatalf("the playback link after the restore: %d", st)
	}
	if st, body := manager.call("POST", "/api/v2/third-party/recordings/hard-delete", map[string]any{"fileIds": []string{f.FileID}}, &br); st != 200 ||
		!br.Results[0].Success {
		t.Fatalf("hard delete: %d %s", st, body)
	}
	if st, _, _ := get(t, play.URL, ""); st != 403 {
		t.Fatalf("the playback link of a hard-deleted file: %d", st)
	}
	if st, _, _ := get(t, api+f.FileID+"/download", downloader); st != 409 {
		t.Fatalf("download of a hard-deleted file: %d", st)
	}
}
