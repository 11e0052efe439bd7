package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/rooms"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
)

// checkComposites: after the meeting the engine's ffmpeg pool renders
// Alice's member copy and the full-meeting MP4 (both Available within
// minutes on a loaded machine); each plays with a play ticket as H.264 and
// AAC as long as the recording (ffprobe), a download ticket cannot play
// it, and a retry of an Available composite is refused.
func checkComposites(t *testing.T, cp *controlNode, be backend, roomID, recordingID, alice string) {
	t.Helper()
	base := cp.api + "/api/v2/rtc/session/rooms/" + roomID + "/playback/recordings/" + recordingID
	ticket := func(actions ...string) string {
		var tk struct{ Token string }
		if st := cp.call("POST", "/api/v2/rtc/rooms/"+roomID+"/recordings/access", map[string]any{"actions": actions, "lifetimeSeconds": 600}, &tk); st != 200 {
			t.Fatalf("an archive ticket for %v: %d", actions, st)
		}
		return tk.Token
	}
	play, download := ticket("play"), ticket("download")
	type composite struct {
		CompositeID, Kind, State, LastError string
		ParticipantID                       string
		DurationMilliseconds                int64
	}
	var manifest struct {
		DurationMilliseconds int64
		Composites           []composite
		Attachments          []struct{ AttachmentID, Name string }
	}
	began := time.Now()
	testkit.Eventually(t, 4*time.Minute, "the member copy and the meeting MP4 Available", func() bool {
		st, _, body := get(t, base+"/manifest", play)
		if st != 200 || json.Unmarshal(body, &manifest) != nil || len(manifest.Composites) != 2 {
			return false
		}
		for _, c := range manifest.Composites {
			if c.State == "Failed" {
				t.Fatalf("composite failed: %+v", c)
			}
			if c.State != "Available" {
				return false
			}
		}
		return true
	})
	t.Logf("composites Available %s after the check began", time.Since(began).Round(100*time.Millisecond))
	want := float64(manifest.DurationMilliseconds) / 1000
	for _, c := range manifest.Composites {
		st, _, body := get(t, base+"/files/"+c.CompositeID+"/media", play)
		if st != 200 {
			t.Fatalf("the %s composite's media: %d %s", c.Kind, st, tail(string(body), 300))
		}
		path := filepath.Join(t.TempDir(), c.Kind+".mp4")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		p := probeFile(t, path)
		if p.videoCodec != "h264" || p.audioCodec != "aac" || math.Abs(p.duration-want) > 0.5 || p.videoFrames < int(want*20) {
			t.Fatalf("the %s composite: %+v; the recording lasted %.2f s", c.Kind, p, want)
		}
		t.Logf("%s composite: %d bytes, %.2f s (recording %.2f s), %d video and %d audio frames", c.Kind, len(body), p.duration, want, p.videoFrames,
			p.audioFrames)
		if st, _, body := get(t, base+"/files/"+c.CompositeID+"/media", download); st != 401 || !strings.Contains(string(body), "archive_ticket_invalid") {
			t.Fatalf("a download ticket played the %s composite: %d %s", c.Kind, st, body)
		}
		if st, body := be.call("POST", "/api/v2/rtc/rooms/"+roomID+"/recording/continuous/"+recordingID+"/composites/"+c.CompositeID+"/retry", nil,
			nil); st != 409 || !strings.Contains(string(body), "composite_not_failed") {
			t.Fatalf("a retry of an Available composite: %d %s", st, body)
		}
	}
	checkPackage(t, cp, roomID, recordingID, base, play, download, alice)
}

// checkPackage: the package needs download (a view+play ticket gets 401)
// and is a complete ZIP of the manifest, the timeline attachment, the
// track files and both composites; the attachment shows with view but
// downloads only with download; the runs list with the archive ticket;
// Alice's participant token reads the post-meeting manifest.
func checkPackage(t *testing.T, cp *controlNode, roomID, recordingID, base, play, download, alice string) {
	t.Helper()
	if st, _, body := get(t, base+"/package", play); st != 401 || !strings.Contains(string(body), "archive_ticket_invalid") {
		t.Fatalf("a package with a view and play ticket: %d %s", st, body)
	}
	st, hdr, zipped := get(t, base+"/package", download)
	if st != 200 || hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("the package: %d %v %s", st, hdr, tail(string(zipped), 300))
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("the package's ZIP (%d bytes): %v", len(zipped), err)
	}
	var names []string
	tracks := 0
	for _, f := range zr.File {
		names = append(names, f.Name)
		if strings.HasPrefix(f.Name, "tracks/") && f.UncompressedSize64 > 10000 {
			tracks++
		}
	}
	for _, n := range []string{"manifest.json", "attachments/timeline.json", "composites/meeting.mp4"} {
		if !slices.Contains(names, n) {
			t.Fatalf("the package lacks %s: %v", n, names)
		}
	}
	if tracks < 1 || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "composites/member-") }) {
		t.Fatalf("the package holds %v", names)
	}
	t.Logf("package: %d bytes, %v", len(zipped), names)
	att := base + "/attachments/timeline"
	if st, _, body := get(t, att+"/download", play); st != 401 {
		t.Fatalf("an attachment download with a view and play ticket: %d %s", st, body)
	}
	st, _, body := get(t, att+"/content", play)
	var tl struct {
		RecordingID string
		Tracks      []struct{ MediaKind string }
		Composites  []struct{ CompositeID string }
	}
	if st != 200 || json.Unmarshal(body, &tl) != nil || tl.RecordingID != recordingID || len(tl.Tracks) != 2 || len(tl.Composites) != 2 {
		t.Fatalf("the timeline: %d %s", st, body)
	}
	if strings.Contains(string(body), "http") || strings.Contains(string(body), "alice") {
		t.Fatalf("the timeline names a URL or a subject: %s", body)
	}
	if st, hdr, _ := get(t, att+"/download", download); st != 200 || !strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the attachment's download: %d %v", st, hdr)
	}
	var runs struct {
		Total int
		Items []struct{ RecordingID string }
	}
	runsPath := cp.api + "/api/v2/rtc/session/rooms/" + roomID + "/recording/continuous/runs"
	if st, _, body := get(t, runsPath, play); st != 200 || json.Unmarshal(body, &runs) != nil || runs.Total != 1 || runs.Items[0].RecordingID != recordingID {
		t.Fatalf("the runs with an archive ticket: %d %s", st, body)
	}
	if st, _, body := get(t, runsPath, alice); st != 401 {
		t.Fatalf("the runs with a participant token: %d %s", st, body)
	}
	var sm struct {
		RecordingID string
		Composites  []struct{ CompositeID string }
	}
	dev := "/api/v2/rtc/session/rooms/" + roomID
	if st, body := device(t, cp.api, alice, "GET", dev+"/playback/manifest", nil, &sm); st != 200 || sm.RecordingID != recordingID || len(sm.Composites) != 2 {
		t.Fatalf("the post-meeting manifest: %d %s", st, body)
	}
	if st, body := device(t, cp.api, play, "GET", dev+"/playback/manifest", nil, nil); st != 401 {
		t.Fatalf("an archive ticket as a participant token: %d %s", st, body)
	}
}

// checkKilledSubscriber: a WHEP viewer (GStreamer) killed while it plays
// sends no DELETE; the engine's session ends (ICE gives up, or it never
// connected), the final flow report names the session, and the room
// subscription moves to Ended.
func checkKilledSubscriber(t *testing.T, cp *controlNode, roomID, bob, publicationID string) {
	t.Helper()
	dev := "/api/v2/rtc/session/rooms/" + roomID
	var sub struct{ SubscriptionID, WhepURL string }
	if st, body := device(t, cp.api, bob, "POST", dev+"/subscriptions", map[string]any{"publicationId": publicationID}, &sub); st != 200 {
		t.Fatalf("subscription: %d %s", st, body)
	}
	state := func() string {
		kv, _, err := store.Get(context.Background(), cp.s.Node, "/rtc/subscriptions/"+roomID+"/"+sub.SubscriptionID, store.Local)
		if err != nil || kv == nil {
			t.Fatalf("the subscription's record: %v", err)
		}
		s, err := store.Decode[rooms.Subscription](kv)
		if err != nil {
			t.Fatal(err)
		}
		return s.State
	}
	viewer := startProcess(t, "/usr/bin/python3", gstWHEPScript(), "--url", cp.api+sub.WhepURL, "--seconds", "300", "--bearer", bob)
	testkit.Eventually(t, 60*time.Second, "the viewer's subscription Active", func() bool { return state() == "Active" })
	killed := time.Now()
	viewer.Cmd.Process.Kill() // SIGKILL: no DELETE
	testkit.Eventually(t, 90*time.Second, "the killed viewer's subscription Ended", func() bool { return state() == "Ended" })
	t.Logf("a killed WHEP viewer's subscription Ended %s after the kill", time.Since(killed).Round(100*time.Millisecond))
}
