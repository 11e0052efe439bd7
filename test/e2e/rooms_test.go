package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/chromium"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// publisherPage is the page a meeting participant's browser runs: its
// fake camera and microphone (with codec=VP8, VP8 and RTX only) go to
// the room's WHIP URL on the platform's
// API (same origin: the page's server passes /api/ on), with the
// participant token as a bearer credential, as standard WHIP clients
// send it. It reports the connection state to /report and, when the
// answer says stop, DELETEs the session's Location.
const publisherPage = `<!doctype html><html><body><script>
const q = new URLSearchParams(location.search);
const whip = q.get('whip'), token = q.get('token'), codec = q.get('codec');
async function report(o) {
  const r = await fetch('/report', {method: 'POST', body: JSON.stringify(o)});
  return r.json();
}
(async () => {
  try {
    const media = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 480, frameRate: 25}, audio: true});
    const pc = new RTCPeerConnection();
    for (const track of media.getTracks()) {
      const tr = pc.addTransceiver(track, {direction: 'sendonly'});
      if (codec && track.kind === 'video') {
        tr.setCodecPreferences(RTCRtpSender.getCapabilities('video').codecs.filter(c =>
          c.mimeType === 'video/' + codec || c.mimeType === 'video/rtx'));
      }
    }
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise(res => { if (pc.iceGatheringState === 'complete') res(); else pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && res(); });
    const auth = {'Authorization': 'Bearer ' + token};
    const r = await fetch(whip, {method: 'POST', headers: Object.assign({'Content-Type': 'application/sdp'}, auth), body: pc.localDescription.sdp});
    if (r.status !== 201) { await report({error: 'WHIP answered ' + r.status + ': ' + await r.text()}); return; }
    const loc = r.headers.get('Location');
    await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
    for (;;) {
      await new Promise(res => setTimeout(res, 300));
      const ans = await report({state: pc.connectionState, location: loc});
      if (ans.stop) {
        const d = await fetch(loc, {method: 'DELETE', headers: auth});
        await report({deleted: d.status});
        pc.close();
        return;
      }
    }
  } catch (e) {
    await report({error: String(e)});
  }
})();
</script></body></html>`

type pageReport struct {
	State, Location, Error string
	Deleted                int
}

// publisherHarness serves publisherPage, collects its reports and passes
// /api/ on to the control node.
type publisherHarness struct {
	addr string
	mu   sync.Mutex
	last pageReport
	stop bool
}

func startPublisherHarness(t *testing.T, api string) *publisherHarness {
	t.Helper()
	target, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}
	h := &publisherHarness{}
	mux := http.NewServeMux()
	mux.Handle("/api/", httputil.NewSingleHostReverseProxy(target))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, publisherPage)
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		var rep pageReport
		json.NewDecoder(r.Body).Decode(&rep)
		h.mu.Lock()
		if rep.State != "" || rep.Error != "" || rep.Deleted != 0 {
			h.last = rep
		}
		stop := h.stop
		h.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]bool{"stop": stop})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.addr = ln.Addr().String()
	return h
}

func (h *publisherHarness) wait(t *testing.T, what string, within time.Duration, ok func(pageReport) bool) pageReport {
	t.Helper()
	var got pageReport
	testkit.Eventually(t, within, what, func() bool {
		h.mu.Lock()
		got = h.last
		h.mu.Unlock()
		if got.Error != "" {
			t.Fatalf("the publisher page: %s", got.Error)
		}
		return ok(got)
	})
	return got
}

// device calls a device operation with a participant token.
func device(t *testing.T, api, token, method, path string, body, out any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Svc-RTC-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, data
}

// TestMeetingRoomEndToEnd: a business backend creates a room and hands
// two users access tickets; Alice's Chromium publishes its camera and
// microphone over WHIP through the platform (bearer participant token),
// Bob lists the Active publication, subscribes, and GStreamer's webrtcbin
// plays it over WHEP with Bob's token and decodes Alice's 640x480 video;
// Bob's HTTP-FLV playback ticket plays it too (ffprobe). Credentials stay
// single-purpose: Alice's token cannot play Bob's subscription, the
// playback ticket is no participant token. The room's continuous
// recording (once its policy allows it) records Alice's publication as
// it arrives, H.264 and Opus in one file spanning the recording, and an
// archive ticket opens its manifest (two tracks from the origin). Alice's DELETE stops the
// publication; a second publication whose browser is killed fails once
// the engine's ICE gives up, within 20 s of the kill (rtc.publication.failed).
func TestMeetingRoomEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("rtc.manage", "rtc.recordings.view", "rtc.recordings.play")}
	var room struct{ RoomID, MediaServerID string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms", map[string]any{"name": "Weekly", "idempotencyKey": "weekly-1"}, &room); st != 200 ||
		room.MediaServerID != "media-1" {
		t.Fatalf("create room: %d %s", st, body)
	}
	ticket := func(subject string, caps ...string) string {
		var tk struct{ AccessTicket string }
		if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/access-tickets", map[string]any{"subjectIssuer": "crm", "subjectId": subject,
			"capabilities": caps}, &tk); st != 200 {
			t.Fatalf("ticket: %d %s", st, body)
		}
		return tk.AccessTicket
	}
	dev := "/api/v2/rtc/session/rooms/" + room.RoomID
	join := func(tk string) string {
		var j struct{ ParticipantToken string }
		if st, body := device(t, cp.api, "", "POST", dev+"/join", map[string]any{"accessTicket": tk, "platform": "browser"}, &j); st != 200 {
			t.Fatalf("join: %d %s", st, body)
		}
		return j.ParticipantToken
	}
	alice := join(ticket("alice", "camera.publish", "microphone.publish"))
	bob := join(ticket("bob", "publications.subscribe"))
	// Both devices keep their heartbeats going, as real ones do.
	keepHeartbeats(t, cp.api+dev, alice, bob)

	var pub struct{ PublicationID, WhipURL, State string }
	if st, body := device(t, cp.api, alice, "POST", dev+"/publications", map[string]any{"source": "camera"}, &pub); st != 200 {
		t.Fatalf("publication: %d %s", st, body)
	}
	h := startPublisherHarness(t, cp.api)
	startChromium(t, "http://"+h.addr+"/?whip="+url.QueryEscape(pub.WhipURL)+"&token="+url.QueryEscape(alice))
	published := h.wait(t, "Alice's publication to connect", 60*time.Second, func(r pageReport) bool { return r.State == "connected" })
	if !strings.HasPrefix(published.Location, pub.WhipURL+"/") {
		t.Fatalf("the WHIP Location %q is not under %s", published.Location, pub.WhipURL)
	}

	// The room's recording: the policy allows it, the backend starts it
	// while Alice publishes.
	recBase := "/api/v2/rtc/rooms/" + room.RoomID + "/recording"
	if st, body := be.call("POST", recBase+"/continuous/start", nil, nil); st != 409 || !strings.Contains(string(body), "recording_not_allowed") {
		t.Fatalf("a start before the policy allows it: %d %s", st, body)
	}
	if st, body := be.call("PUT", recBase+"-policy", map[string]any{"enabled": true}, nil); st != 200 {
		t.Fatalf("policy: %d %s", st, body)
	}
	var recd struct {
		RecordingID, State string
		PublicationCount   int
	}
	if st, body := be.call("POST", recBase+"/continuous/start", nil, &recd); st != 200 || recd.State != "Recording" || recd.PublicationCount != 1 {
		t.Fatalf("recording start: %d %s", st, body)
	}
	recordingFrom := time.Now()

	var list struct {
		Items []struct{ PublicationID, State string }
	}
	if st, body := device(t, cp.api, bob, "GET", dev+"/publications", nil, &list); st != 200 || len(list.Items) != 1 ||
		list.Items[0].PublicationID != pub.PublicationID || list.Items[0].State != "Active" {
		t.Fatalf("Bob's publications: %d %s", st, body)
	}
	var sub struct{ SubscriptionID, WhepURL string }
	if st, body := device(t, cp.api, bob, "POST", dev+"/subscriptions", map[string]any{"publicationId": pub.PublicationID}, &sub); st != 200 {
		t.Fatalf("subscription: %d %s", st, body)
	}
	// Alice's token does not open Bob's subscription.
	if out := gstWHEPWith(t, cp.api+sub.WhepURL, alice, 3); !strings.Contains(out, "error WHEP answered 403") {
		t.Fatalf("Alice played Bob's subscription: %s", out)
	}
	out := gstWHEPWith(t, cp.api+sub.WhepURL, bob, 8)
	var frames, width, height, deleted int
	for _, line := range strings.Split(out, "\n") {
		fmt.Sscanf(line, "frames %d width %d height %d", &frames, &width, &height)
		fmt.Sscanf(line, "deleted %d", &deleted)
	}
	if frames < 50 || width != 640 || height != 480 || deleted != 200 {
		t.Fatalf("Bob's WHEP played %d frames of %dx%d, DELETE %d: %s", frames, width, height, deleted, out)
	}

	checkKilledSubscriber(t, cp, room.RoomID, bob, pub.PublicationID)

	var pt struct{ URL string }
	if st, body := device(t, cp.api, bob, "POST", dev+"/playback-ticket", map[string]any{"publicationId": pub.PublicationID}, &pt); st != 200 ||
		!strings.Contains(pt.URL, "/rtc/"+room.RoomID+"."+pub.PublicationID+".live.flv?svc_ticket=") {
		t.Fatalf("playback ticket: %d %s", st, body)
	}
	res, err := probe(t, pt.URL, 3)
	if err != nil || res.codec != "h264" || res.width != 640 || res.packets < 25 {
		t.Fatalf("the playback ticket's HTTP-FLV: %+v %v", res, err)
	}
	t.Logf("WHEP through the room: %d frames of %dx%d in 8 s; HTTP-FLV ticket: %d video packets in 3 s", frames, width, height, res.packets)
	flvTicket, _ := url.QueryUnescape(pt.URL[strings.Index(pt.URL, "svc_ticket=")+len("svc_ticket="):])
	if st, body := device(t, cp.api, flvTicket, "POST", dev+"/heartbeat", nil, nil); st != 401 || !strings.Contains(string(body), "rtc_token_invalid") {
		t.Fatalf("the playback ticket as a participant token: %d %s", st, body)
	}
	// The playback ticket is bound to HTTP-FLV: on WHEP the engine refuses it.
	whep := strings.Replace(pt.URL, ".live.flv?", "/whep?", 1)
	if out := gstWHEP(t, whep, 3); !strings.Contains(out, "error WHEP answered 403") {
		t.Fatalf("the HTTP-FLV ticket opened WHEP: %s", out)
	}

	// Stop: Stopping until the engine has sealed Alice's file, then
	// Stopped; her track is one file in its own encodings (H.264 and Opus
	// as her browser sent them) spanning the recording.
	var stopped struct{ State string }
	if st, body := be.call("POST", recBase+"/continuous/"+recd.RecordingID+"/stop", nil, &stopped); st != 200 ||
		(stopped.State != "Stopped" && stopped.State != "Stopping") {
		t.Fatalf("recording stop: %d %s", st, body)
	}
	recorded := time.Since(recordingFrom)
	testkit.Eventually(t, 30*time.Second, "the recording Stopped", func() bool {
		var runs struct {
			Total int
			Items []struct{ State string }
		}
		be.call("GET", recBase+"/continuous/runs", nil, &runs)
		return runs.Total == 1 && runs.Items[0].State == "Stopped"
	})
	var files struct {
		Total int
		Rows  []struct {
			DurationMs int64
			Codecs     []string
			FileState  string
		}
	}
	testkit.Eventually(t, 30*time.Second, "Alice's recorded file", func() bool {
		cp.call("GET", "/api/v2/recording/files?app=rtc&streamId="+room.RoomID+"."+pub.PublicationID, nil, &files)
		return files.Total >= 1
	})
	var span int64
	for _, f := range files.Rows {
		span += f.DurationMs
		if got := strings.Join(f.Codecs, ","); f.FileState != "Completed" || !strings.Contains(got, "H264") || !strings.Contains(got, "Opus") {
			t.Fatalf("Alice's recorded file: %+v", f)
		}
	}
	if span < recorded.Milliseconds()-3000 || span > recorded.Milliseconds()+1000 {
		t.Fatalf("Alice's track spans %d ms of a %d ms recording", span, recorded.Milliseconds())
	}
	t.Logf("recording: %d file(s), %d ms of a %d ms recording", files.Total, span, recorded.Milliseconds())

	// The archive: a ticket for view and play (the backend holds no
	// download, so it cannot grant it) opens the manifest, which has
	// Alice's two tracks in their own encodings from the origin; her
	// participant token does not open it.
	if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/recordings/access", map[string]any{"actions": []string{"download"}}, nil); st != 403 {
		t.Fatalf("a download ticket from an issuer without download: %d %s", st, body)
	}
	var archive struct {
		Token   string
		Actions []string
	}
	if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/recordings/access", map[string]any{"lifetimeSeconds": 60}, &archive); st != 200 ||
		strings.Join(archive.Actions, ",") != "view,play" {
		t.Fatalf("archive ticket: %d %s", st, body)
	}
	manifestPath := dev + "/playback/recordings/" + recd.RecordingID + "/manifest"
	var manifest struct {
		State                string
		DurationMilliseconds int64
		Tracks               []struct {
			ParticipantID, DeviceSessionID, MediaKind, Codec string
			Files                                            []struct {
				FileID                                   string
				OffsetMilliseconds, DurationMilliseconds int64
			}
		}
	}
	if st, body := doJSON(t, cp.api, archive.Token, "GET", manifestPath, nil); st != 200 {
		t.Fatalf("manifest: %d %s", st, body)
	} else if err := json.Unmarshal(body, &manifest); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, tr := range manifest.Tracks {
		kinds = append(kinds, tr.MediaKind+":"+tr.Codec)
		if tr.DeviceSessionID != pub.PublicationID || len(tr.Files) == 0 || tr.Files[0].OffsetMilliseconds < -1000 || tr.Files[0].OffsetMilliseconds > 1000 {
			t.Fatalf("track %+v", tr)
		}
	}
	if manifest.State != "Stopped" || strings.Join(kinds, ",") != "audio:Opus,video:H264" {
		t.Fatalf("manifest: %+v", manifest)
	}
	if st, body := doJSON(t, cp.api, "", "GET", manifestPath+"?rtc_archive_token="+url.QueryEscape(archive.Token), nil); st != 200 {
		t.Fatalf("manifest by query: %d %s", st, body)
	}
	if st, body := device(t, cp.api, alice, "GET", manifestPath, nil, nil); st != 401 || !strings.Contains(string(body), "archive_ticket_invalid") {
		t.Fatalf("a participant token on the archive: %d %s", st, body)
	}
	checkTrackFiles(t, cp, be, room.RoomID, recd.RecordingID, archive.Token, manifest.Tracks[0].Files[0].FileID)
	checkFullExport(t, cp, be, room.RoomID, recd.RecordingID, archive.Token, pub.PublicationID)
	checkComposites(t, cp, be, room.RoomID, recd.RecordingID, alice)

	h.mu.Lock()
	h.stop = true
	h.mu.Unlock()
	if r := h.wait(t, "Alice's DELETE", 30*time.Second, func(r pageReport) bool { return r.Deleted != 0 }); r.Deleted != 200 {
		t.Fatalf("DELETE of the WHIP session answered %d", r.Deleted)
	}
	if st, body := device(t, cp.api, bob, "GET", dev+"/publications", nil, &list); st != 200 || len(list.Items) != 0 {
		t.Fatalf("publications after Alice stopped: %d %s", st, body)
	}
	for _, name := range []string{"rtc.publication.started", "rtc.publication.stopped"} {
		evs := cp.events(name)
		if len(evs) != 1 || !strings.Contains(string(evs[0].Data), room.RoomID) || strings.Contains(string(evs[0].Data), "http") {
			t.Fatalf("%s: %v", name, evs)
		}
	}

	// A publisher that vanishes without DELETE (its browser killed): the
	// engine's ICE gives up, the stream ends, and the publication fails.
	var pub2 struct{ PublicationID, WhipURL string }
	if st, body := device(t, cp.api, alice, "POST", dev+"/publications", map[string]any{"mediaKinds": []string{"video"}}, &pub2); st != 200 {
		t.Fatalf("second publication: %d %s", st, body)
	}
	h2 := startPublisherHarness(t, cp.api)
	browser := startChromium(t, "http://"+h2.addr+"/?whip="+url.QueryEscape(pub2.WhipURL)+"&token="+url.QueryEscape(alice))
	h2.wait(t, "the second publication to connect", 60*time.Second, func(r pageReport) bool { return r.State == "connected" })
	testkit.Eventually(t, 30*time.Second, "the second publication's stream Online", func() bool {
		var ss struct{ Total int }
		cp.call("GET", "/api/v2/streams/sessions?state=Online&stream="+room.RoomID+"."+pub2.PublicationID, nil, &ss)
		return ss.Total == 1
	})
	killed := time.Now()
	browser.Cmd.Process.Kill() // SIGKILL: no DTLS close, no DELETE
	testkit.Eventually(t, 60*time.Second, "rtc.publication.failed", func() bool { return len(cp.events("rtc.publication.failed")) == 1 })
	// The engine's ICE gives up 5 s + 5 s after the last packet (pion's
	// defaults took 30 s); the rest is the hook and the event's way here.
	if d := time.Since(killed); d > 20*time.Second {
		t.Fatalf("the vanished publisher was noticed after %s", d)
	} else {
		t.Logf("a killed publisher's publication failed %s after the kill", d.Round(100*time.Millisecond))
	}
	if st, body := device(t, cp.api, bob, "GET", dev+"/publications", nil, &list); st != 200 || len(list.Items) != 0 {
		t.Fatalf("publications after the publisher vanished: %d %s", st, body)
	}
	if st, body := device(t, cp.api, alice, "POST", dev+"/leave", nil, nil); st != 200 {
		t.Fatalf("leave: %d %s", st, body)
	}
}

// checkTrackFiles: a track's file plays with a play ticket (Range
// honoured) as Alice's H.264 and Opus; its download needs a download
// ticket (one from a super administrator, as the backend lacks
// download); the recording lists for the backend and for the ticket.
func checkTrackFiles(t *testing.T, cp *controlNode, be backend, roomID, recordingID, playTicket, fileID string) {
	t.Helper()
	files := cp.api + "/api/v2/rtc/session/rooms/" + roomID + "/playback/recordings/" + recordingID + "/files/" + fileID
	if st, hdr, body := get(t, files+"/media", playTicket, "Range", "bytes=0-99"); st != 206 || len(body) != 100 ||
		!strings.HasPrefix(hdr.Get("Content-Range"), "bytes 0-99/") {
		t.Fatalf("a range of the track's media: %d %v", st, hdr)
	}
	st, _, body := get(t, files+"/media?rtc_archive_token="+url.QueryEscape(playTicket), "")
	if st != 200 {
		t.Fatalf("the track's media: %d %s", st, tail(string(body), 300))
	}
	path := filepath.Join(t.TempDir(), "track.mp4")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	p := probeFile(t, path)
	if p.videoCodec != "h264" || p.audioCodec != "opus" || p.videoFrames < 25 || p.audioFrames < 50 {
		t.Fatalf("the track's media: %+v", p)
	}
	t.Logf("track file: %d bytes, %d video and %d audio frames, %.1f s", len(body), p.videoFrames, p.audioFrames, p.duration)
	if st, _, body := get(t, files+"/download", playTicket); st != 401 || !strings.Contains(string(body), "archive_ticket_invalid") {
		t.Fatalf("a download with a play ticket: %d %s", st, body)
	}
	var dl struct{ Token string }
	if st := cp.call("POST", "/api/v2/rtc/rooms/"+roomID+"/recordings/access", map[string]any{"actions": []string{"download"}}, &dl); st != 200 {
		t.Fatalf("a download ticket: %d", st)
	}
	if st, hdr, got := get(t, files+"/download", dl.Token); st != 200 || len(got) != len(body) ||
		!strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the download: %d %d bytes %v", st, len(got), hdr)
	}
	var list struct {
		Total int
		Items []struct{ RecordingID, State string }
	}
	if st, body := be.call("GET", "/api/v2/rtc/recordings?state=Stopped&roomId="+roomID, nil, &list); st != 200 || list.Total != 1 ||
		list.Items[0].RecordingID != recordingID {
		t.Fatalf("the backend's recordings: %d %s", st, body)
	}
	if st, body := doJSON(t, cp.api, playTicket, "GET", "/api/v2/rtc/recordings?pageSize=5", nil); st != 200 ||
		json.Unmarshal(body, &list) != nil || list.Total != 1 {
		t.Fatalf("the ticket's recordings: %d %s", st, body)
	}
}

// checkFullExport: an export of 1-4 s of the recording becomes Available
// (the engine's cut/merge), its file plays as H.264 and Opus of about
// 3 s, and its download is a ZIP of the manifest and that file.
func checkFullExport(t *testing.T, cp *controlNode, be backend, roomID, recordingID, playTicket, publicationID string) {
	t.Helper()
	var x struct{ ExportID, State string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms/"+roomID+"/recording/continuous/"+recordingID+"/full-exports",
		map[string]any{"startMilliseconds": 1000, "endMilliseconds": 4000}, &x); st != 200 || (x.State != "Pending" && x.State != "Running") {
		t.Fatalf("full export: %d %s", st, body)
	}
	exports := cp.api + "/api/v2/rtc/session/rooms/" + roomID + "/playback/recordings/" + recordingID + "/full-exports"
	testkit.Eventually(t, 60*time.Second, "the export Available", func() bool {
		var list struct {
			Items []struct{ ExportID, State string }
		}
		st, _, body := get(t, exports, playTicket)
		return st == 200 && json.Unmarshal(body, &list) == nil && len(list.Items) == 1 && list.Items[0].State == "Available"
	})
	st, _, body := get(t, exports+"/"+x.ExportID+"/media", playTicket)
	if st != 200 {
		t.Fatalf("the export's media: %d %s", st, tail(string(body), 300))
	}
	path := filepath.Join(t.TempDir(), "export.mp4")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	p := probeFile(t, path)
	if p.videoCodec != "h264" || p.audioCodec != "opus" || p.duration < 2 || p.duration > 6 {
		t.Fatalf("the export's file: %+v", p)
	}
	t.Logf("full export of 3 s: %.2f s, %d video and %d audio frames", p.duration, p.videoFrames, p.audioFrames)
	if st, _, body := get(t, exports+"/"+x.ExportID+"/download", playTicket); st != 401 {
		t.Fatalf("an export download with a play ticket: %d %s", st, body)
	}
	var dl struct{ Token string }
	if st := cp.call("POST", "/api/v2/rtc/rooms/"+roomID+"/recordings/access", map[string]any{"actions": []string{"download"}}, &dl); st != 200 {
		t.Fatalf("a download ticket: %d", st)
	}
	st, hdr, zipped := get(t, exports+"/"+x.ExportID+"/download", dl.Token)
	if st != 200 || hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("the export's download: %d %v", st, hdr)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("the export's ZIP: %v", err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name == publicationID+".mp4" && f.UncompressedSize64 != uint64(len(body)) {
			t.Fatalf("the ZIP's MP4 has %d bytes, the media %d", f.UncompressedSize64, len(body))
		}
	}
	if strings.Join(names, ",") != "manifest.json,"+publicationID+".mp4" {
		t.Fatalf("the export's ZIP holds %v", names)
	}
}

// startChromium opens url in headless Chromium with a fake camera and
// microphone.
func startChromium(t *testing.T, url string) *process {
	t.Helper()
	return startProcess(t, chromium.Path, chromium.Args(t.TempDir(), url, chromium.WebRTCFlags...)...)
}

// gstWHEPWith runs the GStreamer WHEP client with a bearer token.
func gstWHEPWith(t *testing.T, url, bearer string, seconds int) string {
	t.Helper()
	out, err := runProcess("/usr/bin/python3", gstWHEPScript(), "--url", url, "--seconds", fmt.Sprint(seconds), "--bearer", bearer)
	if err != nil {
		t.Fatalf("the GStreamer WHEP client: %v %s", err, out)
	}
	return out
}

// keepHeartbeats sends each participant token's heartbeat every 5 s until
// the test ends, as real devices do (a silent participant's token
// expires).
func keepHeartbeats(t *testing.T, roomURL string, tokens ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			for _, tok := range tokens {
				req, _ := http.NewRequestWithContext(ctx, "POST", roomURL+"/heartbeat", nil)
				req.Header.Set("X-Svc-RTC-Token", tok)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}()
}
