package e2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// videoPackets lists a file's video packets as ffmpeg's framemd5 gives
// them with -c copy: the MD5 of each packet's bytes, and its DTS in
// seconds.
func videoPackets(t *testing.T, path string) (sums []string, dts []float64) {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f", "framemd5", "-").Output()
	if err != nil {
		t.Fatalf("framemd5 of %s: %v", path, err)
	}
	var tb float64 = 1
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "#tb 0:") {
			n, d, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#tb 0:")), "/")
			num, _ := strconv.ParseFloat(n, 64)
			den, _ := strconv.ParseFloat(d, 64)
			tb = num / den
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 6 {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		sums, dts = append(sums, strings.TrimSpace(f[5])), append(dts, v*tb)
	}
	return sums, dts
}

type cutMergeTask struct {
	TaskID, TaskStatus, MediaServerID, Error, CallbackState string
	ProcessPercentage, SourceFileCount, Gaps                int
	FileSize, ActualDurationMs                              int64
}

// TestCutMergeEndToEnd: ffmpeg pushes 6 s, then after a pause 4 s more,
// recorded in 2 s files; a third-party cut/merge task over a range that
// spans both pushes (and the gap between them) runs on the media server,
// posts its callback and is verified by polling. Its output, downloaded
// through the API, is a contiguous run of the source files' video packets
// (framemd5, byte for byte), two streams, without a gap in its decode
// times, as long as the covered ranges; it plays through a lease and
// single-use links, and once deleted with its output nothing plays it.
func TestCutMergeEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) { c.WebhookAllowPrivateTargets = true })
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
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.delete", "recordings.play", "recordings.download")}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"mediaServerId": "media-1", "app": "live", "streamId": "cm",
		"segmentSeconds": 2}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	push := func(seconds int) {
		if err := pushStream(t, "rtsp://encoder:encoder-Pa55word@"+servers.Rows[0].RtspAddr+"/live/cm", seconds).Wait(); err != nil {
			t.Fatalf("ffmpeg push: %v", err)
		}
	}
	var files struct {
		Total int
		Rows  []recordingFile
	}
	recorded := func(ms int64) func() bool {
		return func() bool {
			be.call("GET", "/api/v2/recording/files?streamId=cm&pageSize=100", nil, &files)
			var sum int64
			for _, f := range files.Rows {
				sum += f.DurationMs
			}
			return sum >= ms
		}
	}
	push(6)
	testkit.Eventually(t, 60*time.Second, "the first push recorded", recorded(5500))
	time.Sleep(2 * time.Second) // the gap: two seconds without the stream
	push(4)
	testkit.Eventually(t, 60*time.Second, "the second push recorded", recorded(9500))
	if files.Total < 5 {
		t.Fatalf("%d files", files.Total)
	}
	first, last := files.Rows[0], files.Rows[len(files.Rows)-1]
	if gap := files.Rows[len(files.Rows)-1].StartTime.Sub(first.StartTime); gap < 8*time.Second {
		t.Fatalf("no gap between the pushes: %s", gap)
	}

	// Bad requests.
	for _, bad := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"app": "live", "streamId": "cm", "startTime": last.EndTime.Format(time.RFC3339Nano), "endTime": first.StartTime.Format(time.RFC3339Nano)}, 400},
		{map[string]any{"app": "live", "streamId": "cm", "startTime": "2026-01-01T00:00:00", "endTime": "2026-01-01T00:01:00"}, 400},
		{map[string]any{"app": "live", "streamId": "cm", "startTime": "2020-01-01T00:00:00Z", "endTime": "2020-01-01T01:00:00Z"}, 404},
		{map[string]any{"startTime": first.StartTime.Format(time.RFC3339Nano), "endTime": last.EndTime.Format(time.RFC3339Nano)}, 400},
		{map[string]any{"app": "live", "streamId": "cm", "startTime": first.StartTime.Format(time.RFC3339Nano), "endTime": last.EndTime.Format(time.RFC3339Nano),
			"callbackUrl": "file:///etc/passwd"}, 400},
	} {
		if st, body := be.call("POST", "/api/v2/third-party/cut-merge/tasks", bad.body, nil); st != bad.want {
			t.Fatalf("cut/merge %v: %d %s, want %d", bad.body, st, body, bad.want)
		}
	}

	// The callback receiver.
	var mu sync.Mutex
	var callbacks []map[string]any
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		callbacks = append(callbacks, m)
		mu.Unlock()
	}))
	defer rcv.Close()

	// From 0.5 s into the first file to 0.5 s before the end of the last.
	from, to := first.StartTime.Add(500*time.Millisecond), last.EndTime.Add(-500*time.Millisecond)
	var task cutMergeTask
	if st, body := be.call("POST", "/api/v2/third-party/cut-merge/tasks", map[string]any{"app": "live", "streamId": "cm",
		"startTime": from.Format(time.RFC3339Nano), "endTime": to.Format(time.RFC3339Nano), "callbackUrl": rcv.URL + "/done"}, &task); st != 200 ||
		task.TaskStatus != "Pending" || task.MediaServerID != "media-1" || task.SourceFileCount != files.Total || strings.Contains(string(body), rcv.URL) {
		t.Fatalf("create: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the task to succeed", func() bool {
		be.call("GET", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID, nil, &task)
		return task.TaskStatus == "Succeeded" || task.TaskStatus == "Failed"
	})
	// The engine's timeline runs on across the pause (a new publisher
	// continues the stream's clock), so only the wall clock has the gap:
	// the output is as long as the media, not as the range.
	if task.TaskStatus != "Succeeded" || task.ProcessPercentage != 100 || task.FileSize <= 0 ||
		task.ActualDurationMs >= last.EndTime.Sub(first.StartTime).Milliseconds()-1000 {
		t.Fatalf("task: %+v", task)
	}
	testkit.Eventually(t, 30*time.Second, "the callback", func() bool { mu.Lock(); defer mu.Unlock(); return len(callbacks) == 1 })
	if cb := callbacks[0]; cb["taskId"] != task.TaskID || cb["taskStatus"] != "Succeeded" {
		t.Fatalf("callback %v", cb)
	}
	testkit.Eventually(t, 10*time.Second, "the callback recorded", func() bool {
		be.call("GET", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID, nil, &task)
		return task.CallbackState == "Delivered"
	})
	// Module 06's view of it: its media server must be named.
	if st, _ := be.call("GET", "/api/v2/recording/cut-merge/tasks/"+task.TaskID+"?mediaServerId=media-2", nil, nil); st != 404 {
		t.Fatalf("the task on another media server: %d", st)
	}
	var detail struct {
		Task    cutMergeTask
		Sources []struct{ FileID string }
	}
	if st, body := be.call("GET", "/api/v2/recording/cut-merge/tasks/"+task.TaskID+"/detail?mediaServerId=media-1", nil, &detail); st != 200 ||
		len(detail.Sources) != files.Total || detail.Sources[0].FileID != first.FileID || strings.Contains(string(body), "/live/cm/") {
		t.Fatalf("detail: %d %s", st, body)
	}
	var list struct {
		Total int
		Rows  []cutMergeTask
	}
	if st, _ := be.call("GET", "/api/v2/recording/cut-merge/tasks?taskStatus=Succeeded&app=live", nil, &list); st != 200 || list.Total != 1 {
		t.Fatalf("list: %d %+v", st, list)
	}

	var counts struct{ Pending, Running, Succeeded, Failed int }
	if st, body := be.call("GET", "/api/v2/recording/cut-merge/tasks/status?mediaServerId=media-1", nil, &counts); st != 200 || counts.Succeeded != 1 ||
		counts.Pending+counts.Running+counts.Failed != 0 {
		t.Fatalf("status: %d %s", st, body)
	}
	if st, body := be.call("GET", "/api/v2/recording/cut-merge/backlog?mediaServerId=media-1", nil, &counts); st != 200 || counts.Pending != 0 {
		t.Fatalf("backlog: %d %s", st, body)
	}

	// The output, downloaded, against its sources.
	dir := t.TempDir()
	st, hd, body := get(t, cp.api+"/api/v2/recording/cut-merge/tasks/"+task.TaskID+"/download", be.token)
	if st != 200 || int64(len(body)) != task.FileSize || !strings.HasPrefix(hd.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %d %v, %d bytes of %d", st, hd, len(body), task.FileSize)
	}
	output := filepath.Join(dir, "output.mp4")
	os.WriteFile(output, body, 0o600)
	// Like a recording, an sidx per track (video, audio) right after the
	// init, so seeking in it over Range reads the index, not every moof.
	var boxes []string
	for off := 0; off+8 <= len(body) && len(boxes) < 5; {
		boxes = append(boxes, string(body[off+4:off+8]))
		off += int(binary.BigEndian.Uint32(body[off:]))
	}
	if strings.Join(boxes[:4], " ") != "ftyp moov sidx sidx" {
		t.Fatalf("the output's first boxes are %v, want ftyp moov sidx sidx", boxes)
	}
	var sources []string
	for i, f := range files.Rows {
		st, _, b := get(t, cp.api+"/api/v2/recording/files/"+f.FileID+"/download", be.token)
		if st != 200 {
			t.Fatalf("source %d: %d", i, st)
		}
		p := filepath.Join(dir, fmt.Sprintf("source-%d.mp4", i))
		os.WriteFile(p, b, 0o600)
		s, _ := videoPackets(t, p)
		sources = append(sources, s...)
	}
	out, dts := videoPackets(t, output)
	start := -1
	for i := range sources {
		if i+len(out) <= len(sources) && sources[i] == out[0] {
			start = i
			break
		}
	}
	if start < 0 || len(out) < 150 {
		t.Fatalf("the output's %d video packets do not start with a source packet", len(out))
	}
	for i, s := range out {
		if sources[start+i] != s {
			t.Fatalf("output packet %d differs from source packet %d", i, start+i)
		}
	}
	// From the keyframe at or before 0.5 s of the first file (its first
	// frame: a keyframe a second) to the fragment covering the range's end.
	if start != 0 {
		t.Fatalf("the output starts at source packet %d, not at the first file's keyframe", start)
	}
	for i := 1; i < len(dts); i++ {
		if d := dts[i] - dts[i-1]; d > 0.1 || d <= 0 {
			t.Fatalf("the output's video decode time jumps by %.3f s at packet %d", d, i)
		}
	}
	p := probeFile(t, output)
	if p.videoCodec != "h264" || p.audioCodec != "aac" || p.videoFrames != len(out) ||
		p.duration < float64(task.ActualDurationMs)/1000-0.2 || p.duration > float64(task.ActualDurationMs)/1000+0.5 ||
		float64(task.ActualDurationMs) < 1000*(float64(len(out))/25-0.1) {
		t.Fatalf("the output decodes as %+v; the task says %d ms, %d video packets", p, task.ActualDurationMs, len(out))
	}
	// The range without the gap: what the pushes covered from the cut's
	// start (the first file's start) to the end of the last fragment.
	if covered := time.Duration(task.ActualDurationMs) * time.Millisecond; covered < 9*time.Second-500*time.Millisecond || covered > 10*time.Second+time.Second {
		t.Fatalf("the output covers %s of 10 s pushed", covered)
	}

	// Lease and links.
	var ls lease
	if st, body := be.call("POST", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID+"/playback-lease", map[string]any{}, &ls); st != 200 ||
		len(ls.Sources) != 2 {
		t.Fatalf("lease: %d %s", st, body)
	}
	for _, src := range ls.Sources { // http-fmp4, hls
		if pr, err := probe(t, src.URL, 10); err != nil || pr.codec != "h264" || !pr.audio || pr.packets != len(out) {
			t.Fatalf("ffprobe of the leased output over %s: %+v %v", src.Protocol, pr, err)
		}
	}
	var link mediaLink
	if st, body := be.call("POST", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID+"/download-link", map[string]any{}, &link); st != 200 ||
		link.ResourceKind != "cut-merge-output" || link.Action != "download" {
		t.Fatalf("download link: %d %s", st, body)
	}
	if st, _, b := get(t, link.URL, ""); st != 200 || int64(len(b)) != task.FileSize {
		t.Fatalf("the download link: %d, %d bytes", st, len(b))
	}
	if st, _, b := get(t, cp.api+"/api/v2/recording/cut-merge/tasks/"+task.TaskID+"/media", be.token, "Range", "bytes=0-99"); st != 206 || len(b) != 100 {
		t.Fatalf("media range: %d, %d bytes", st, len(b))
	}

	// Delete with the output: the lease, the links and the task are gone.
	if st, body := be.call("DELETE", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID+"?deleteOutputFile=true", nil, nil); st != 200 {
		t.Fatalf("delete: %d %s", st, body)
	}
	if st, _, _ := get(t, ls.Sources[0].URL, ""); st != 403 && st != 404 {
		t.Fatalf("the lease after the delete: %d", st)
	}
	// Once the engine's cached admission (5 s at most) is gone, on_play
	// itself refuses it.
	testkit.Eventually(t, 30*time.Second, "the lease refused", func() bool { st, _, _ := get(t, ls.Sources[0].URL, ""); return st == 403 })
	if st, _ := be.call("GET", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID, nil, nil); st != 404 {
		t.Fatalf("the deleted task: %d", st)
	}
	if st, _ := be.call("POST", "/api/v2/third-party/cut-merge/tasks/"+task.TaskID+"/playback-link", map[string]any{}, nil); st != 404 {
		t.Fatalf("a link of the deleted task: %d", st)
	}
}
