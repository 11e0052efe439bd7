// Command recwritebench measures the recorder's write path: N concurrent
// ~2 Mbps H.264+AAC streams recorded into fragmented MP4 with 1 s parts
// and 10 s segments by one recorder on one core, against a bare loop
// writing the same media bytes (one write(2) per second of each stream,
// a new file every 10 s) and against `ffmpeg -c copy -f segment` (fMP4,
// one fragment per keyframe = 1 s, 10 s segments) on the same clip, all in
// the same run and pinned to the same core. It reports CPU per stream, CPU
// per GB written and frames lost, and writes its section of
// docs/benchmarks.md.
//
// The recorder and the bare loop run in a child process (this program with
// -child) limited to one core (GOMAXPROCS=1 under taskset), fed by the
// engine's own file source (filesource.Play: the clip's frames in real
// time, one goroutine per stream, as a publisher session would hand them
// to the hub). The child also runs the feed alone (publishers into the
// hub, nothing recording) so the recorder's own share can be told apart.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	ladder := flag.String("streams", "50,150,300", "stream counts, comma-separated")
	seconds := flag.Int("seconds", 20, "seconds each stream is recorded per case")
	ffmpegMax := flag.Int("ffmpeg-max", 40, "at most this many ffmpeg processes per case (its CPU per stream is measured on them)")
	quick := flag.Bool("quick", false, "one small case (20 streams, 10 s)")
	child := flag.String("child", "", "internal: run one mode (rec, bare, feed) and print its result")
	n := flag.Int("n", 0, "internal: streams of the child")
	clip := flag.String("clip", "", "internal: the child's clip")
	dir := flag.String("dir", "", "internal: the child's directory")
	cpuprofile := flag.String("cpuprofile", "", "write the CPU profile of each rec child to this path, suffixed with its stream count")
	flag.Parse()
	if *child != "" {
		if err := runChild(*child, *n, *seconds, *clip, *dir, *cpuprofile); err != nil {
			fmt.Fprintln(os.Stderr, "recwritebench child:", err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		*ladder, *seconds = "20", 10
	}
	if err := run(*out, *ladder, *seconds, *ffmpegMax, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "recwritebench:", err)
		os.Exit(1)
	}
}

// result is one measured run: a child's mode or the ffmpeg processes.
type result struct {
	Mode    string  `json:"mode"`
	Streams int     `json:"streams"`
	CPU     float64 `json:"cpu"`  // seconds of CPU (user+system)
	Wall    float64 `json:"wall"` // seconds
	Bytes   int64   `json:"bytes"`
	Fed     uint64  `json:"fed"`     // frames handed to the hub (or the loop)
	Written uint64  `json:"written"` // frames in the files
	Dropped uint64  `json:"dropped"` // frames the recorder's readers lost
}

// perStream is the share of one core each stream took.
func (r result) perStream() float64 { return r.CPU / r.Wall / float64(r.Streams) * 100 }

// perGB is CPU seconds per GB written.
func (r result) perGB() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return r.CPU / (float64(r.Bytes) / 1e9)
}

func run(outPath, ladder string, seconds, ffmpegMax int, cpuprofile string) error {
	for _, p := range []string{"ffmpeg", "taskset"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s is required (make bench installs ffmpeg; taskset is util-linux): %w", p, err)
		}
	}
	var counts []int
	for _, s := range strings.Split(ladder, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c <= 0 {
			return fmt.Errorf("-streams: %q is not a count", s)
		}
		counts = append(counts, c)
	}
	dir, err := os.MkdirTemp("", "recwritebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	clip := filepath.Join(dir, "clip.ts")
	// 20 s of 1280x720 25 fps H.264 (a keyframe every second, so every
	// part starts at one) at about 1.9 Mbit/s plus 96 kbit/s AAC.
	args := []string{"-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "20",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "25", "-bf", "0",
		"-b:v", "1900k", "-maxrate", "2300k", "-bufsize", "3800k",
		"-c:a", "aac", "-b:a", "96k", "-ac", "2", "-f", "mpegts", clip}
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg: %w\n%s", err, out)
	}
	c, err := filesource.LoadFile(clip)
	if err != nil {
		return err
	}
	var clipBytes int
	for _, f := range c.Frames {
		clipBytes += f.Size()
	}
	kbps := float64(clipBytes) * 8 / c.Duration.Seconds() / 1000
	self, err := os.Executable()
	if err != nil {
		return err
	}
	type row struct{ rec, bare, feed, ff result }
	var rows []row
	for _, count := range counts {
		var r row
		for _, mode := range []string{"feed", "bare", "rec"} {
			prof := ""
			if mode == "rec" && cpuprofile != "" {
				prof = fmt.Sprintf("%s.%d", cpuprofile, count)
			}
			res, err := childRun(self, mode, count, seconds, clip, filepath.Join(dir, mode), prof)
			if err != nil {
				return err
			}
			fmt.Printf("%d streams %s: %.1f%% core/stream, %.2f CPU s/GB, fed %d written %d dropped %d\n",
				count, mode, res.perStream(), res.perGB(), res.Fed, res.Written, res.Dropped)
			switch mode {
			case "rec":
				r.rec = res
			case "bare":
				r.bare = res
			case "feed":
				r.feed = res
			}
		}
		if r.ff, err = ffmpegRun(min(count, ffmpegMax), seconds, clip, filepath.Join(dir, "ffmpeg")); err != nil {
			return err
		}
		fmt.Printf("%d ffmpeg: %.1f%% core/stream, %.2f CPU s/GB\n", r.ff.Streams, r.ff.perStream(), r.ff.perGB())
		rows = append(rows, r)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "## Recording write path (recwritebench)\n\n%s. `go run ./test/bench/recwritebench` (in `make bench`; `-quick` for one small case), %s, "+
		"%d s per case.\n\n", benchdoc.Machine(), time.Now().UTC().Format("2006-01-02 15:04 MST"), seconds)
	fmt.Fprintf(&w, "- Input: a 20 s 1280x720 25 fps H.264 clip (keyframe every second, no B-frames) + AAC, %.0f kbit/s of media, made with ffmpeg and "+
		"looped by the engine's file source in real time, one goroutine per stream, start times spread over the first second.\n", kbps)
	fmt.Fprintf(&w, "- `rec`: the engine's hub and recorder (`mediaengine/recorder`: fMP4, 1 s parts, 10 s segments, sidecar index) in one process "+
		"under `taskset -c 1` with GOMAXPROCS=1. `bare`: the same feed into a loop that writes each stream's media bytes with one write(2) per "+
		"second and a new file every 10 s (no hub, no boxes). `feed`: the publishers into the hub with nothing recording (what an ingest "+
		"costs before the recorder). `ffmpeg`: `ffmpeg -re -stream_loop -1 -i clip.ts -c copy -f segment -segment_time 10 -segment_format mp4 "+
		"-segment_format_options movflags=+frag_keyframe+empty_moov+default_base_moof`, one process per stream (at most %d), pinned to the same "+
		"core; it also demuxes the TS, which the recorder's input does not.\n", ffmpegMax)
	fmt.Fprintf(&w, "- CPU is user+system time of the process(es) over the whole run (set-up excluded for the child), per stream as %% of one core; "+
		"per GB of files written. Frames lost = frames handed to the hub - frames in the finished files (the recorder's own count).\n\n")
	fmt.Fprintf(&w, "| streams | rec %%core/stream | rec CPU s/GB | bare CPU s/GB | rec/bare | feed %%core/stream | ffmpeg procs | "+
		"ffmpeg %%core/stream | rec/ffmpeg per stream | frames fed | frames lost | reader drops |\n")
	fmt.Fprintf(&w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&w, "| %d | %.2f | %.2f | %.2f | %.2fx | %.2f | %d | %.2f | %.2fx | %d | %d | %d |\n", r.rec.Streams, r.rec.perStream(), r.rec.perGB(),
			r.bare.perGB(), r.rec.perGB()/r.bare.perGB(), r.feed.perStream(), r.ff.Streams, r.ff.perStream(), r.rec.perStream()/r.ff.perStream(),
			r.rec.Fed, int64(r.rec.Fed)-int64(r.rec.Written), r.rec.Dropped)
	}
	last := rows[len(rows)-1]
	fit := 100 / last.rec.perStream()
	fmt.Fprintf(&w, "\nTargets (largest case):\n\n")
	fmt.Fprintf(&w, "- 300 streams on one core, zero frames lost: %d streams ran at %.0f%% of the core with %d frames lost; at that rate one core holds "+
		"about %.0f streams (%s).\n", last.rec.Streams, last.rec.perStream()*float64(last.rec.Streams), int64(last.rec.Fed)-int64(last.rec.Written),
		fit, benchdoc.Verdict(last.rec.Streams >= 300 && last.rec.Fed == last.rec.Written && last.rec.perStream()*float64(last.rec.Streams) < 100))
	fmt.Fprintf(&w, "- CPU per GB at most 1.5x the bare loop: %.2fx (%s).\n", last.rec.perGB()/last.bare.perGB(), benchdoc.Verdict(last.rec.perGB() <= 1.5*last.bare.perGB()))
	fmt.Fprintf(&w, "- At most half the CPU per stream of ffmpeg: %.2fx (%s).\n", last.rec.perStream()/last.ff.perStream(),
		benchdoc.Verdict(last.rec.perStream() <= 0.5*last.ff.perStream()))
	fmt.Fprintf(&w, "\nThe machine's two cores are shared with other work (other agents' builds and tests during a development session), so "+
		"per-stream figures move by 10-20%% between runs; the core the runs are pinned to is not reserved.\n")
	fmt.Print(w.String())
	return benchdoc.WriteSection(outPath, "recwritebench", w.String())
}

// childRun runs one mode in a child pinned to core 1 with GOMAXPROCS=1.
func childRun(self, mode string, n, seconds int, clip, dir, cpuprofile string) (result, error) {
	defer os.RemoveAll(dir)
	cmd := exec.Command("taskset", "-c", "1", self, "-child", mode, "-n", strconv.Itoa(n), "-seconds", strconv.Itoa(seconds), "-clip", clip, "-dir", dir,
		"-cpuprofile", cpuprofile)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("child %s: %w", mode, err)
	}
	var r result
	return r, json.Unmarshal(bytes.TrimSpace(out), &r)
}

// ffmpegRun records the clip with n ffmpeg processes on core 1 for seconds.
func ffmpegRun(n, seconds int, clip, dir string) (result, error) {
	defer os.RemoveAll(dir)
	r := result{Mode: "ffmpeg", Streams: n}
	start := time.Now()
	var cmds []*exec.Cmd
	for i := range n {
		d := filepath.Join(dir, strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return r, err
		}
		cmd := exec.Command("taskset", "-c", "1", "ffmpeg", "-v", "error", "-nostdin", "-re", "-stream_loop", "-1", "-i", clip, "-t", strconv.Itoa(seconds),
			"-c", "copy", "-f", "segment", "-segment_time", "10", "-segment_format", "mp4",
			"-segment_format_options", "movflags=+frag_keyframe+empty_moov+default_base_moof", "-reset_timestamps", "1", filepath.Join(d, "%05d.mp4"))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return r, err
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return r, fmt.Errorf("ffmpeg: %w", err)
		}
		// taskset execs ffmpeg in place, so this is ffmpeg's own usage.
		r.CPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	r.Wall = time.Since(start).Seconds()
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if st, err := d.Info(); err == nil {
				r.Bytes += st.Size()
			}
		}
		return nil
	})
	return r, nil
}
