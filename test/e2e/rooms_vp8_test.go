package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestMeetingRecordingVP8: a participant whose browser publishes VP8 (and
// Opus) is recorded by the room's continuous recording in its own
// encoding: the manifest lists video:VP8 and audio:Opus, and the track's
// file, fetched with an archive ticket, holds vp8 and opus that ffprobe
// reads; the member copy and the full-meeting MP4 made from it are H.264
// and AAC as long as the recording (checkComposites).
func TestMeetingRecordingVP8(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("rtc.manage", "rtc.recordings.view", "rtc.recordings.play")}
	var room struct{ RoomID string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms", map[string]any{"name": "VP8", "idempotencyKey": "vp8-1"}, &room); st != 200 {
		t.Fatalf("create room: %d %s", st, body)
	}
	var tk struct{ AccessTicket string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/access-tickets", map[string]any{"subjectIssuer": "crm", "subjectId": "alice",
		"capabilities": []string{"camera.publish", "microphone.publish"}}, &tk); st != 200 {
		t.Fatalf("ticket: %d %s", st, body)
	}
	dev := "/api/v2/rtc/session/rooms/" + room.RoomID
	var j struct{ ParticipantToken string }
	if st, body := device(t, cp.api, "", "POST", dev+"/join", map[string]any{"accessTicket": tk.AccessTicket, "platform": "browser"}, &j); st != 200 {
		t.Fatalf("join: %d %s", st, body)
	}
	alice := j.ParticipantToken
	keepHeartbeats(t, cp.api+dev, alice)
	var pub struct{ PublicationID, WhipURL string }
	if st, body := device(t, cp.api, alice, "POST", dev+"/publications", map[string]any{"source": "camera"}, &pub); st != 200 {
		t.Fatalf("publication: %d %s", st, body)
	}
	h := startPublisherHarness(t, cp.api)
	startChromium(t, "http://"+h.addr+"/?codec=VP8&whip="+url.QueryEscape(pub.WhipURL)+"&token="+url.QueryEscape(alice))
	h.wait(t, "Alice's VP8 publication to connect", 60*time.Second, func(r pageReport) bool { return r.State == "connected" })

	recBase := "/api/v2/rtc/rooms/" + room.RoomID + "/recording"
	if st, body := be.call("PUT", recBase+"-policy", map[string]any{"enabled": true}, nil); st != 200 {
		t.Fatalf("policy: %d %s", st, body)
	}
	var recd struct{ RecordingID, State string }
	if st, body := be.call("POST", recBase+"/continuous/start", nil, &recd); st != 200 || recd.State != "Recording" {
		t.Fatalf("recording start: %d %s", st, body)
	}
	// What the recording spans, not a wait for a condition.
	time.Sleep(6 * time.Second)
	if st, body := be.call("POST", recBase+"/continuous/"+recd.RecordingID+"/stop", nil, nil); st != 200 {
		t.Fatalf("recording stop: %d %s", st, body)
	}
	testkit.Eventually(t, 30*time.Second, "the recording Stopped", func() bool {
		var runs struct {
			Total int
			Items []struct{ State string }
		}
		be.call("GET", recBase+"/continuous/runs", nil, &runs)
		return runs.Total == 1 && runs.Items[0].State == "Stopped"
	})
	var archive struct{ Token string }
	if st, body := be.call("POST", "/api/v2/rtc/rooms/"+room.RoomID+"/recordings/access", map[string]any{"lifetimeSeconds": 60}, &archive); st != 200 {
		t.Fatalf("archive ticket: %d %s", st, body)
	}
	var manifest struct {
		Tracks []struct {
			MediaKind, Codec string
			Files            []struct{ FileID string }
		}
	}
	if st, body := doJSON(t, cp.api, archive.Token, "GET", dev+"/playback/recordings/"+recd.RecordingID+"/manifest", nil); st != 200 ||
		json.Unmarshal(body, &manifest) != nil {
		t.Fatalf("manifest: %d %s", st, body)
	}
	var kinds []string
	for _, tr := range manifest.Tracks {
		kinds = append(kinds, tr.MediaKind+":"+tr.Codec)
	}
	if strings.Join(kinds, ",") != "audio:Opus,video:VP8" || len(manifest.Tracks[0].Files) == 0 {
		t.Fatalf("manifest tracks %v, want audio:Opus,video:VP8 with files", kinds)
	}
	file := cp.api + dev + "/playback/recordings/" + recd.RecordingID + "/files/" + manifest.Tracks[0].Files[0].FileID + "/media"
	st, _, body := get(t, file+"?rtc_archive_token="+url.QueryEscape(archive.Token), "")
	if st != 200 {
		t.Fatalf("the track's media: %d %s", st, tail(string(body), 300))
	}
	path := filepath.Join(t.TempDir(), "track.mp4")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	p := probeFile(t, path)
	if p.videoCodec != "vp8" || p.audioCodec != "opus" || p.videoFrames < 25 || p.audioFrames < 50 {
		t.Fatalf("the track's media: %+v", p)
	}
	t.Logf("VP8 track file: %d bytes, %d video and %d audio frames, %.1f s", len(body), p.videoFrames, p.audioFrames, p.duration)
	// The engine's ffmpeg pool decodes the VP8 track into Alice's member
	// copy and the full-meeting MP4 (H.264 and AAC).
	checkComposites(t, cp, be, room.RoomID, recd.RecordingID, alice)
}
