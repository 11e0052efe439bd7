package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/testkit"
)

// window is one engine CPU window.
type window struct {
	recording bool
	cores     float64
	load      string
}

// recordResult is the recording measurement.
type recordResult struct {
	windows    []window
	length     time.Duration
	composites []time.Duration // from each stop until its composites were done
	tracks     []trackFiles
	probe      string
}

// trackFiles is what the recording wrote for one publication.
type trackFiles struct {
	files  int
	bytes  int64
	ms     int64
	codecs []string
}

// measureRecording has six participants publish (the presenter and five
// more), then alternates windows with the room's continuous recording
// running and stopped, measuring the engine process's CPU in each.
func (r *room) measureRecording(c *clip, length time.Duration, rounds int) (recordResult, error) {
	res := recordResult{length: length}
	pubs := []string{r.pub}
	for i := 2; i <= 6; i++ {
		p, err := r.addPublisher(c, fmt.Sprintf("participant-%d", i))
		if err != nil {
			return res, err
		}
		pubs = append(pubs, p)
	}
	base := "/api/v2/rtc/rooms/" + r.id
	if st, body, err := r.b.call("PUT", base+"/recording-policy", map[string]any{"enabled": true}, nil); err != nil || st != 200 {
		return res, fmt.Errorf("recording policy: %d %s %w", st, body, err)
	}
	const settle = 3 * time.Second
	time.Sleep(settle)
	for round := 1; round <= rounds; round++ {
		var rec struct{ RecordingID, State string }
		if st, body, err := r.b.call("POST", base+"/recording/continuous/start", nil, &rec); err != nil || st != 200 {
			return res, fmt.Errorf("recording start: %d %s %w", st, body, err)
		}
		if !testkit.Within(30*time.Second, func() bool {
			var cur struct {
				Recording *struct{ State string }
			}
			r.b.call("GET", base+"/recording/continuous/current", nil, &cur)
			return cur.Recording != nil && cur.Recording.State == "Recording"
		}) {
			return res, fmt.Errorf("round %d: the recording was not Recording within 30 s", round)
		}
		time.Sleep(settle) // every track's file is open
		on := r.b.measureWindow(true, length)
		res.windows = append(res.windows, on)
		if st, body, err := r.b.call("POST", base+"/recording/continuous/"+rec.RecordingID+"/stop", nil, nil); err != nil || st != 200 {
			return res, fmt.Errorf("recording stop: %d %s %w", st, body, err)
		}
		stopped := time.Now()
		// The stop plans the member copies and the full-meeting MP4,
		// which the engine renders with ffmpeg: that is the meeting's
		// after-cost, not recording's, so the next window waits for it.
		if err := r.waitComposites(rec.RecordingID); err != nil {
			return res, fmt.Errorf("round %d: %w", round, err)
		}
		res.composites = append(res.composites, time.Since(stopped))
		time.Sleep(settle)
		off := r.b.measureWindow(false, length)
		res.windows = append(res.windows, off)
		fmt.Fprintf(os.Stderr, "   round %d: recording %.3f cores (load %s), stopped %.3f cores (load %s); composites took %s\n", round,
			on.cores, on.load, off.cores, off.load, res.composites[len(res.composites)-1].Round(time.Second))
	}
	for _, p := range pubs {
		tf, err := r.b.trackFiles(r.id + "." + p)
		if err != nil {
			return res, err
		}
		if tf.files < rounds || !slices.Contains(tf.codecs, "H264") || !slices.Contains(tf.codecs, "Opus") {
			return res, fmt.Errorf("publication %s: %d files with %v after %d recordings", p, tf.files, tf.codecs, rounds)
		}
		res.tracks = append(res.tracks, tf)
		fmt.Fprintf(os.Stderr, "   publication %s: %d files, %d bytes, %.1f s, %v\n", p, tf.files, tf.bytes, float64(tf.ms)/1000, tf.codecs)
	}
	probe, err := r.b.probeOneTrack(r.id + "." + pubs[len(pubs)-1])
	if err != nil {
		return res, err
	}
	res.probe = probe
	return res, nil
}

// measureWindow is the engine's CPU (user and system, its own process)
// over length, in cores.
func (b *bench) measureWindow(recording bool, length time.Duration) window {
	cpu0, t0 := benchdoc.CPUSeconds(b.enginePid), time.Now()
	time.Sleep(length)
	cpu1, elapsed := benchdoc.CPUSeconds(b.enginePid), time.Since(t0)
	return window{recording: recording, cores: (cpu1 - cpu0) / elapsed.Seconds(), load: loadAverage()}
}

// waitComposites waits until the stopped recording's composites are all
// Available or Failed (the archive's manifest lists them).
func (r *room) waitComposites(recordingID string) error {
	var archive struct{ Token string }
	if st, body, err := r.b.call("POST", "/api/v2/rtc/rooms/"+r.id+"/recordings/access", map[string]any{"lifetimeSeconds": 600}, &archive); err != nil ||
		st != 200 {
		return fmt.Errorf("archive ticket: %d %s %w", st, body, err)
	}
	archiveToken := archive.Token
	var last string
	if testkit.Within(9*time.Minute, func() bool {
		var m struct {
			State      string
			Composites []struct{ State string }
		}
		st, body, err := benchdoc.Call(r.b.api, archiveToken, "GET", r.device()+"/playback/recordings/"+recordingID+"/manifest", nil, &m)
		if err != nil || st != 200 {
			last = fmt.Sprintf("manifest: %d %s %v", st, body, err)
			return false
		}
		last = fmt.Sprintf("recording %s, composites %v", m.State, m.Composites)
		if m.State != "Stopped" || len(m.Composites) == 0 {
			return false
		}
		for _, c := range m.Composites {
			if c.State != "Available" && c.State != "Failed" {
				return false
			}
		}
		return true
	}) {
		return nil
	}
	return fmt.Errorf("the composites were not done within 9 minutes (%s)", last)
}

// trackFiles lists the recorded files of a room stream.
func (b *bench) trackFiles(stream string) (trackFiles, error) {
	var list struct {
		Total int
		Rows  []struct {
			FileSize, DurationMs int64
			Codecs               []string
			FileState            string
		}
	}
	if st, body, err := b.call("GET", "/api/v2/recording/files?app=rtc&pageSize=100&streamId="+stream, nil, &list); err != nil || st != 200 {
		return trackFiles{}, fmt.Errorf("recorded files of %s: %d %s %w", stream, st, body, err)
	}
	var tf trackFiles
	for _, f := range list.Rows {
		if f.FileState != "Completed" {
			continue
		}
		tf.files++
		tf.bytes += f.FileSize
		tf.ms += f.DurationMs
		for _, c := range f.Codecs {
			if !slices.Contains(tf.codecs, c) {
				tf.codecs = append(tf.codecs, c)
			}
		}
	}
	return tf, nil
}

// probeOneTrack downloads one recorded file of a room stream and
// answers what ffprobe finds in it.
func (b *bench) probeOneTrack(stream string) (string, error) {
	var list struct {
		Rows []struct {
			FileID     string
			DurationMs int64
		}
	}
	if st, body, err := b.call("GET", "/api/v2/recording/files?app=rtc&pageSize=1&streamId="+stream, nil, &list); err != nil || st != 200 || len(list.Rows) == 0 {
		return "", fmt.Errorf("recorded files of %s: %d %s %w", stream, st, body, err)
	}
	req, _ := http.NewRequest("GET", b.api+"/api/v2/recording/files/"+list.Rows[0].FileID+"/download", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("download: %d %s", resp.StatusCode, body)
	}
	path := filepath.Join(b.dir, "track.mp4")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, resp.Body)
	f.Close()
	if err != nil {
		return "", err
	}
	entries := "stream=codec_name,width,height,sample_rate,start_time,duration:format=start_time,duration"
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", entries, "-of", "json", path).Output()
	if err != nil {
		return "", fmt.Errorf("ffprobe: %w", err)
	}
	var p struct {
		Streams []struct {
			CodecName     string `json:"codec_name"`
			Width, Height int
			SampleRate    string `json:"sample_rate"`
			StartTime     string `json:"start_time"`
			Duration      string
		}
		Format struct {
			StartTime string `json:"start_time"`
			Duration  string
		}
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return "", err
	}
	var parts []string
	for _, s := range p.Streams {
		if s.Width > 0 {
			parts = append(parts, fmt.Sprintf("%s %dx%d (%s s from %s)", s.CodecName, s.Width, s.Height, s.Duration, s.StartTime))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s Hz (%s s from %s)", s.CodecName, s.SampleRate, s.Duration, s.StartTime))
		}
	}
	if len(parts) < 2 {
		return "", fmt.Errorf("ffprobe found %v in a recorded track", parts)
	}
	return fmt.Sprintf("%s; file %s s from %s (the file listing says %.1f s)", strings.Join(parts, " + "), p.Format.Duration, p.Format.StartTime,
		float64(list.Rows[0].DurationMs)/1000), nil
}
