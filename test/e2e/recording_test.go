package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/webhooks"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// webhookReceiver collects the signed webhook POSTs of a delivery plan.
type webhookReceiver struct {
	mu     sync.Mutex
	bodies [][]byte
	bad    []string
	secret string
}

func startWebhookReceiver(t *testing.T, secret string) (*webhookReceiver, string) {
	r := &webhookReceiver{secret: secret}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := webhooks.Verify([]byte(r.secret), req.Header.Get(webhooks.HeaderTimestamp), req.Header.Get(webhooks.HeaderSignature), body,
			time.Now(), 5*time.Minute); err != nil {
			r.bad = append(r.bad, err.Error())
		}
		r.bodies = append(r.bodies, body)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL + "/hook"
}

func (r *webhookReceiver) events(name string) []map[string]json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]json.RawMessage
	for _, b := range r.bodies {
		var env map[string]json.RawMessage
		json.Unmarshal(b, &env)
		var n string
		json.Unmarshal(env["eventName"], &n)
		if n == name {
			out = append(out, env)
		}
	}
	return out
}

type recordingFile struct {
	FileID, FileName, ChannelID, FileState, StreamID, MediaServerID string
	FileSize, DurationMs                                            int64
	StartTime, EndTime                                              time.Time
}

// TestRecordingEndToEnd: a camera channel on a real agent and engine is
// recorded in 2 s files through the API; each file is indexed once from
// the engine's on_record_mp4 with the recording.file.completed event
// (contract A's data keys exactly), which a webhook receiver gets signed;
// the files list by channel and by time intersection, never with a path;
// a stop ends the session and a second stop answers recording_not_active;
// autoRecord makes the leader's pass start an automatic session.
func TestRecordingEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, func(c *config.Config) { c.WebhookAllowPrivateTargets = true })
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	const secret = "a recording webhook secret of enough length"
	rcv, hookURL := startWebhookReceiver(t, secret)
	if st := cp.call("POST", "/api/v2/system/webhooks/subscriptions", map[string]any{"name": "recordings", "endpoint": hookURL, "secret": secret,
		"enabled": true, "events": []string{"recording.*"}, "allowHttp": true, "timeoutSeconds": 10, "maxAttempts": 5}, nil); st != 200 {
		t.Fatalf("delivery plan: %d", st)
	}
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Yard camera", "protocol": "rtsp",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "yard", "mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "channels.manage")}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("recordings.view")}

	// Bad input first: no stream named, a channel that does not exist, a
	// stop of a stream not recorded, a time without a zone, start after end.
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{}, nil); st != 400 {
		t.Fatalf("start without a stream: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"channelId": "01a20000-0000-7000-8000-000000000000"}, nil); st != 404 {
		t.Fatalf("start of a missing channel: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"channelId": ch.ChannelID}, nil); st != 404 ||
		!strings.Contains(string(body), "recording_not_active") {
		t.Fatalf("stop of a stream not recorded: %d %s", st, body)
	}
	if st, body := viewer.call("GET", "/api/v2/third-party/recordings?startTime=2026-01-01T00:00:00", nil, nil); st != 400 {
		t.Fatalf("a time without a zone: %d %s", st, body)
	}
	if st, body := viewer.call("GET", "/api/v2/third-party/recordings?startTime=2026-01-02T00:00:00Z&endTime=2026-01-01T00:00:00Z", nil, nil); st != 400 {
		t.Fatalf("start after end: %d %s", st, body)
	}
	if st, _ := viewer.call("POST", "/api/v2/recording/start", map[string]any{"channelId": ch.ChannelID}, nil); st != 403 {
		t.Fatalf("start with recordings.view only: %d", st)
	}

	// Record before the stream runs: the engine waits for it.
	began := time.Now().UTC()
	var sess struct{ SessionID, State, RecordSource, MediaServerID string }
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"channelId": ch.ChannelID, "segmentSeconds": 2}, &sess); st != 200 ||
		sess.State != "Recording" || sess.RecordSource != "manual" || sess.MediaServerID != "media-1" {
		t.Fatalf("start: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("channel start: %d %s", st, body)
	}
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 90*time.Second, "three recorded files", func() bool {
		viewer.call("GET", "/api/v2/recording/files?channelId="+ch.ChannelID, nil, &files)
		return files.Total >= 3
	})
	var stopped struct{ SessionID, State string }
	if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"channelId": ch.ChannelID}, &stopped); st != 200 ||
		stopped.State != "Stopped" || stopped.SessionID != sess.SessionID {
		t.Fatalf("stop: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/recording/stop", map[string]any{"channelId": ch.ChannelID}, nil); st != 404 {
		t.Fatalf("second stop: %d %s", st, body)
	}
	// The stop's last file arrives with its report; then nothing more.
	var all struct {
		Total int
		Rows  []recordingFile
	}
	var raw []byte
	testkit.Eventually(t, 30*time.Second, "the last file indexed", func() bool {
		_, raw = viewer.call("GET", "/api/v2/recording/files?channelId="+ch.ChannelID+"&pageSize=100", nil, &all)
		return all.Total > files.Total && len(cp.events("recording.file.completed")) == all.Total
	})
	if strings.Contains(string(raw), "relPath") || strings.Contains(string(raw), "/live/yard/") {
		t.Fatalf("a listing exposes a path: %s", raw)
	}
	ids := map[string]bool{}
	for i, f := range all.Rows {
		if ids[f.FileID] || f.FileState != "Completed" || f.ChannelID != ch.ChannelID || strings.Contains(f.FileName, "/") || f.FileSize <= 0 ||
			f.StreamID != "yard" || f.MediaServerID != "media-1" || f.StartTime.Before(began.Add(-time.Second)) || !f.EndTime.After(f.StartTime) {
			t.Fatalf("file %d: %+v", i, f)
		}
		if i < len(all.Rows)-1 && (f.DurationMs < 1900 || f.DurationMs > 4000) {
			t.Fatalf("file %d lasts %d ms; files close at the first keyframe after 2 s", i, f.DurationMs)
		}
		if i > 0 && f.StartTime.Before(all.Rows[i-1].StartTime) {
			t.Fatalf("files not in time order: %+v", all.Rows)
		}
		ids[f.FileID] = true
	}
	// The events: one per file, contract A's keys exactly.
	evs := cp.events("recording.file.completed")
	wantKeys := []string{"App", "MediaServerId", "Vhost", "duration", "fileName", "fileSize", "occurredAtUtc", "streamId"}
	for _, ev := range evs {
		var data map[string]any
		json.Unmarshal(ev.Data, &data)
		var keys []string
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("event data keys %v, want %v", keys, wantKeys)
		}
		if _, ok := data["fileSize"].(string); !ok || strings.Contains(data["fileName"].(string), "/") {
			t.Fatalf("event data %v", data)
		}
		if _, ok := data["duration"].(string); !ok || data["MediaServerId"] != "media-1" || data["streamId"] != "yard" {
			t.Fatalf("event data %v", data)
		}
	}
	// The receiver gets each of them, signed.
	testkit.Eventually(t, 60*time.Second, "the webhooks", func() bool { return len(rcv.events("recording.file.completed")) >= len(evs) })
	rcv.mu.Lock()
	if len(rcv.bad) > 0 {
		t.Fatalf("webhook signatures: %v", rcv.bad)
	}
	rcv.mu.Unlock()
	for _, env := range rcv.events("recording.file.completed") {
		var data map[string]any
		json.Unmarshal(env["data"], &data)
		if len(data) != len(wantKeys) {
			t.Fatalf("delivered data %v", data)
		}
	}

	// Time intersection: a range inside the second file selects it alone
	// (with its neighbours only if they touch the range).
	second := all.Rows[1]
	mid := second.StartTime.Add(time.Duration(second.DurationMs/2) * time.Millisecond)
	q := url.Values{"channelId": {ch.ChannelID}, "startTime": {mid.Format(time.RFC3339Nano)}, "endTime": {mid.Add(time.Millisecond).Format(time.RFC3339Nano)}}
	var hit struct {
		Total int
		Rows  []recordingFile
	}
	if st, body := viewer.call("GET", "/api/v2/third-party/recordings?"+q.Encode(), nil, &hit); st != 200 || hit.Total != 1 || hit.Rows[0].FileID != second.FileID {
		t.Fatalf("intersection with the middle of file 2: %d %s", st, body)
	}
	q.Set("startTime", all.Rows[0].StartTime.Add(-time.Hour).Format(time.RFC3339))
	q.Set("endTime", all.Rows[len(all.Rows)-1].EndTime.Add(time.Hour).Format(time.RFC3339))
	if viewer.call("GET", "/api/v2/third-party/recordings?"+q.Encode(), nil, &hit); hit.Total != all.Total {
		t.Fatalf("a range around everything lists %d of %d", hit.Total, all.Total)
	}
	q.Set("startTime", all.Rows[len(all.Rows)-1].EndTime.Add(time.Minute).Format(time.RFC3339))
	q.Set("endTime", all.Rows[len(all.Rows)-1].EndTime.Add(time.Hour).Format(time.RFC3339))
	if viewer.call("GET", "/api/v2/third-party/recordings?"+q.Encode(), nil, &hit); hit.Total != 0 {
		t.Fatalf("a range after everything lists %d", hit.Total)
	}

	// The third-party flow on the second file: lease, play, renew,
	// soft-delete, restore, hard-delete.
	player := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.play", "recordings.delete", "recordings.manage")}
	var ls lease
	if st, body := player.call("POST", "/api/v2/third-party/recordings/"+second.FileID+"/playback-lease", map[string]any{}, &ls); st != 200 ||
		len(ls.Sources) != 2 || ls.Sources[0].Protocol != "http-fmp4" || ls.Sources[1].Protocol != "hls" || ls.State != "Active" {
		t.Fatalf("recording lease: %d %s", st, body)
	}
	src := ls.Sources[0].URL
	if st, body := player.call("POST", "/api/v2/third-party/recordings/"+second.FileID+"/playback-lease", map[string]any{"protocols": []string{"rtsp"}}, nil); st != 400 {
		t.Fatalf("a recording lease over rtsp: %d %s", st, body)
	}
	fetch := func(u, rng string) (int, int) {
		req, _ := http.NewRequest("GET", u, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, len(b)
	}
	if st, n := fetch(src, ""); st != 200 || int64(n) != second.FileSize {
		t.Fatalf("the leased file: %d, %d bytes of %d", st, n, second.FileSize)
	}
	if st, n := fetch(src, "bytes=0-1023"); st != 206 || n != 1024 {
		t.Fatalf("a range of the leased file: %d, %d bytes", st, n)
	}
	if st, _ := fetch(src, fmt.Sprintf("bytes=%d-", second.FileSize+1)); st != 416 {
		t.Fatalf("a range past its end: %d", st)
	}
	if st, _ := fetch(strings.Replace(src, second.FileID, all.Rows[0].FileID, 1), ""); st != 403 {
		t.Fatalf("the ticket on another file: %d", st)
	}
	pr, err := probe(t, src, 10)
	if err != nil || pr.codec != "h264" || pr.width != 320 || pr.packets < 40 || !pr.audio {
		t.Fatalf("ffprobe of the leased file: %+v %v", pr, err)
	}
	if pr, err := probe(t, src+"&start=1", 10); err != nil || pr.codec != "h264" || pr.packets == 0 {
		t.Fatalf("ffprobe from 1 s: %+v %v", pr, err)
	}
	// The HLS source: the same frames through the VOD playlist.
	if hp, err := probe(t, ls.Sources[1].URL, 10); err != nil || hp.codec != "h264" || hp.packets != pr.packets || !hp.audio {
		t.Fatalf("ffprobe of the leased HLS playlist: %+v %v (the file: %+v)", hp, err, pr)
	}
	var renewed lease
	if st, body := player.call("POST", "/api/v2/third-party/playback-leases/"+ls.LeaseID+"/renew", map[string]any{}, &renewed); st != 200 ||
		renewed.Sources[0].URL != src || renewed.RenewCount != 1 {
		t.Fatalf("renew: %d %s", st, body)
	}
	type batchResult struct {
		Results []struct {
			FileID, FileState, Code string
			Success                 bool
		}
	}
	var br batchResult
	if st, body := player.call("POST", "/api/v2/third-party/recordings/soft-delete", map[string]any{"fileIds": []string{second.FileID, "nope"}}, &br); st != 200 ||
		!br.Results[0].Success || br.Results[0].FileState != "SoftDeleted" || br.Results[1].Code != "not_found" {
		t.Fatalf("soft delete: %d %s", st, body)
	}
	testkit.Eventually(t, 30*time.Second, "the soft-deleted file's lease refused", func() bool { st, _ := fetch(src, ""); return st == 403 })
	for _, bad := range []any{map[string]any{"fileIds": []string{}}, map[string]any{"fileIds": []string{second.FileID, second.FileID}}} {
		if st, body := player.call("POST", "/api/v2/third-party/recordings/restore", bad, nil); st != 400 {
			t.Fatalf("restore %v: %d %s", bad, st, body)
		}
	}
	if st, body := player.call("POST", "/api/v2/third-party/recordings/restore", map[string]any{"fileIds": []string{second.FileID}}, &br); st != 200 ||
		br.Results[0].FileState != "Completed" {
		t.Fatalf("restore: %d %s", st, body)
	}
	testkit.Eventually(t, 30*time.Second, "the restored file playing again", func() bool { st, _ := fetch(src, ""); return st == 200 })
	if st, body := player.call("POST", "/api/v2/third-party/recordings/hard-delete", map[string]any{"fileIds": []string{second.FileID}}, &br); st != 200 ||
		!br.Results[0].Success || br.Results[0].FileState != "Deleted" {
		t.Fatalf("hard delete: %d %s", st, body)
	}
	testkit.Eventually(t, 30*time.Second, "the hard-deleted file's lease refused", func() bool { st, _ := fetch(src, ""); return st == 403 })
	if st, body := player.call("POST", "/api/v2/third-party/recordings/restore", map[string]any{"fileIds": []string{second.FileID}}, &br); st != 200 ||
		br.Results[0].Success || br.Results[0].Code != "recording_file_gone" {
		t.Fatalf("restore after a hard delete: %d %s", st, body)
	}
	if viewer.call("GET", "/api/v2/recording/files?channelId="+ch.ChannelID+"&pageSize=100", nil, &hit); hit.Total != all.Total-1 {
		t.Fatalf("after a hard delete %d files are listed, want %d", hit.Total, all.Total-1)
	}
	if viewer.call("GET", "/api/v2/recording/files?fileState=Deleted", nil, &hit); hit.Total != 1 || hit.Rows[0].FileID != second.FileID {
		t.Fatalf("the deleted tombstone: %+v", hit)
	}

	// autoRecord: the leader's pass starts an automatic session.
	if st, body := be.call("PUT", "/api/v2/channels/"+ch.ChannelID, map[string]any{"autoRecord": true}, nil); st != 200 {
		t.Fatalf("autoRecord on: %d %s", st, body)
	}
	var sessions struct {
		Total int
		Rows  []struct{ State, RecordSource, ChannelID string }
	}
	testkit.Eventually(t, 60*time.Second, "an automatic session", func() bool {
		viewer.call("GET", "/api/v2/recording/sessions?recordSource=auto&state=Recording", nil, &sessions)
		return sessions.Total == 1 && sessions.Rows[0].ChannelID == ch.ChannelID
	})
	// The engine's actual state next to the session's.
	var status struct {
		MediaServerID string
		Recordings    []struct{ Stream, State, SessionState string }
	}
	testkit.Eventually(t, 30*time.Second, "the engine recording the automatic session", func() bool {
		cp.call("GET", "/api/v2/engine/nodes/media-1/recording-status?streamId=yard", nil, &status)
		return len(status.Recordings) == 1 && status.Recordings[0].State == "recording"
	})
	if status.MediaServerID != "media-1" || status.Recordings[0].SessionState != "Recording" {
		t.Fatalf("recording status: %+v", status)
	}
	var model struct {
		Machines []struct{ Name string }
	}
	if st, _ := viewer.call("GET", "/api/v2/recording/state-model", nil, &model); st != 200 || len(model.Machines) != 5 ||
		model.Machines[2].Name != "cut-merge-task" || model.Machines[3].Name != "disk-volume" || model.Machines[4].Name != "disk-identity" {
		t.Fatalf("state model: %d %+v", st, model)
	}
}
