package e2e

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestMeetingCompositesEndToEnd: two participants publish from Chromium
// (Carol a few seconds after the recording began); after the stop the
// engine's ffmpeg pool renders a member copy of each and the full-meeting
// MP4, a grid of both pictures (1280x360) with their sound mixed, as long
// as the recording (ffprobe); Carol's copy is as long too, her late start
// kept as real time.
func TestMeetingCompositesEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("rtc.manage", "rtc.recordings.view", "rtc.recordings.play")}
	var room struct{ RoomID string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms", map[string]any{"name": "Pair"}, &room); st != 200 {
		t.Fatalf("create room: %d %s", st, body)
	}
	dev := "/api/v2/rtc/session/rooms/" + room.RoomID
	join := func(subject string) string {
		var tk struct{ AccessTicket string }
		if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/access-tickets", map[string]any{"subjectIssuer": "crm", "subjectId": subject,
			"capabilities": []string{"camera.publish", "microphone.publish"}}, &tk); st != 200 {
			t.Fatalf("ticket: %d %s", st, body)
		}
		var j struct{ ParticipantToken string }
		if st, body := device(t, cp.api, "", "POST", dev+"/join", map[string]any{"accessTicket": tk.AccessTicket, "platform": "browser"}, &j); st != 200 {
			t.Fatalf("join: %d %s", st, body)
		}
		return j.ParticipantToken
	}
	tokens := []string{join("alice"), join("carol")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			for _, tok := range tokens {
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
	publish := func(token string) string {
		var pub struct{ PublicationID, WhipURL string }
		if st, body := device(t, cp.api, token, "POST", dev+"/publications", map[string]any{"source": "camera"}, &pub); st != 200 {
			t.Fatalf("publication: %d %s", st, body)
		}
		h := startPublisherHarness(t, cp.api)
		startChromium(t, "http://"+h.addr+"/?whip="+url.QueryEscape(pub.WhipURL)+"&token="+url.QueryEscape(token))
		h.wait(t, "a publication to connect", 60*time.Second, func(r pageReport) bool { return r.State == "connected" })
		testkit.Eventually(t, 30*time.Second, "its stream Online", func() bool {
			var ss struct{ Total int }
			cp.call("GET", "/api/v2/streams/sessions?state=Online&stream="+room.RoomID+"."+pub.PublicationID, nil, &ss)
			return ss.Total == 1
		})
		return pub.PublicationID
	}
	publish(tokens[0])
	recBase := "/api/v2/rtc/rooms/" + room.RoomID + "/recording"
	if st, body := be.call("PUT", recBase+"-policy", map[string]any{"enabled": true}, nil); st != 200 {
		t.Fatalf("policy: %d %s", st, body)
	}
	var recd struct{ RecordingID, State string }
	if st, body := be.call("POST", recBase+"/continuous/start", nil, &recd); st != 200 || recd.State != "Recording" {
		t.Fatalf("recording start: %d %s", st, body)
	}
	publish(tokens[1])
	testkit.Eventually(t, 30*time.Second, "both publications recorded", func() bool {
		var cur struct {
			Recording struct{ PublicationCount int }
		}
		be.call("GET", recBase+"/continuous/current", nil, &cur)
		return cur.Recording.PublicationCount == 2
	})
	// The meeting goes on a few seconds with both (media to record, not
	// a condition to wait for).
	time.Sleep(4 * time.Second)
	if st, body := be.call("POST", recBase+"/continuous/"+recd.RecordingID+"/stop", nil, nil); st != 200 {
		t.Fatalf("recording stop: %d %s", st, body)
	}
	var play struct{ Token string }
	if st := cp.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/recordings/access", map[string]any{"actions": []string{"play"}, "lifetimeSeconds": 600},
		&play); st != 200 {
		t.Fatalf("archive ticket: %d", st)
	}
	base := cp.api + dev + "/playback/recordings/" + recd.RecordingID
	var manifest struct {
		DurationMilliseconds int64
		Composites           []struct{ CompositeID, Kind, State, ParticipantID string }
	}
	testkit.Eventually(t, 4*time.Minute, "three composites Available", func() bool {
		st, _, body := get(t, base+"/manifest", play.Token)
		if st != 200 || json.Unmarshal(body, &manifest) != nil || len(manifest.Composites) != 3 {
			return false
		}
		for _, c := range manifest.Composites {
			if c.State == "Failed" {
				t.Fatalf("a composite failed: %s", body)
			}
			if c.State != "Available" {
				return false
			}
		}
		return true
	})
	want := float64(manifest.DurationMilliseconds) / 1000
	for _, c := range manifest.Composites {
		st, _, body := get(t, base+"/files/"+c.CompositeID+"/media", play.Token)
		if st != 200 {
			t.Fatalf("the %s composite: %d %s", c.Kind, st, tail(string(body), 300))
		}
		path := filepath.Join(t.TempDir(), c.CompositeID+".mp4")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		p := probeFile(t, path)
		size := pictureSize(t, path)
		wantSize := "640x360"
		if c.Kind == "meeting" {
			wantSize = "1280x360"
		}
		if p.videoCodec != "h264" || p.audioCodec != "aac" || math.Abs(p.duration-want) > 0.5 || size != wantSize {
			t.Fatalf("the %s composite: %+v %s; the recording lasted %.2f s", c.Kind, p, size, want)
		}
		t.Logf("%s composite %s: %s, %.2f s of a %.2f s recording, %d bytes", c.Kind, c.ParticipantID, size, p.duration, want, len(body))
	}
}

// pictureSize is a file's video size as WxH.
func pictureSize(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=s=x:p=0",
		path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}
