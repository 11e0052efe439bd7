package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// publisherPage is the page a meeting participant's browser runs: its
// fake camera and microphone go to the room's WHIP URL on the platform's
// API (same origin: the page's server passes /api/ on), with the
// participant token as a bearer credential, as standard WHIP clients
// send it. It reports the connection state to /report and, when the
// answer says stop, DELETEs the session's Location.
const publisherPage = `<!doctype html><html><body><script>
const q = new URLSearchParams(location.search);
const whip = q.get('whip'), token = q.get('token');
async function report(o) {
  const r = await fetch('/report', {method: 'POST', body: JSON.stringify(o)});
  return r.json();
}
(async () => {
  try {
    const media = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 480, frameRate: 25}, audio: true});
    const pc = new RTCPeerConnection();
    for (const track of media.getTracks()) pc.addTransceiver(track, {direction: 'sendonly'});
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
// playback ticket is no participant token. Alice's DELETE stops the
// publication; a second publication whose browser is killed fails once
// the engine's ICE gives up (rtc.publication.failed).
func TestMeetingRoomEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("rtc.manage")}
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			for _, tok := range []string{alice, bob} {
				req, _ := http.NewRequestWithContext(ctx, "POST", cp.api+dev+"/heartbeat", nil)
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
	browser.Cmd.Process.Kill()
	testkit.Eventually(t, 60*time.Second, "rtc.publication.failed", func() bool { return len(cp.events("rtc.publication.failed")) == 1 })
	if st, body := device(t, cp.api, bob, "GET", dev+"/publications", nil, &list); st != 200 || len(list.Items) != 0 {
		t.Fatalf("publications after the publisher vanished: %d %s", st, body)
	}
	if st, _ := device(t, cp.api, alice, "POST", dev+"/leave", nil, nil); st != 200 {
		t.Fatalf("leave: %d", st)
	}
}

// startChromium opens url in headless Chromium with a fake camera and
// microphone.
func startChromium(t *testing.T, url string) *process {
	t.Helper()
	return startProcess(t, "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir="+t.TempDir(), "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		"--disable-features=WebRtcHideLocalIpsWithMdns", "--disable-dev-shm-usage", url)
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
