package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

// recordingCost is the mean engine cores of the windows with recording
// and without, and their difference.
func recordingCost(ws []window) (on, off, diff float64) {
	var nOn, nOff int
	for _, w := range ws {
		if w.recording {
			on += w.cores
			nOn++
		} else {
			off += w.cores
			nOff++
		}
	}
	if nOn == 0 || nOff == 0 {
		return 0, 0, 0
	}
	on, off = on/float64(nOn), off/float64(nOff)
	return on, off, on - off
}

func report(cmd, machine string, pinned bool, js joinResult, rec recordResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Meeting rooms: join to first frame, recording cost (roombench)\n\n")
	fmt.Fprintf(&b, "- Command: `%s` on %s, %s.\n", cmd, machine, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	where := "The engine, the agent and this program share the machine's cores."
	if pinned {
		where = "The agent and its engine run on CPU 0 (`taskset`; the engine's GOMAXPROCS is 1), the control node and the pion peers on CPU 1; " +
			"other work on the machine shares both."
	}
	fmt.Fprintf(&b, "- Set-up: a control node in the benchmark's process, an enrolled `svc agent run` running `svc engine` as its child (real processes, "+
		"loopback). The business backend creates a room and access tickets over the API; participants are pion peers (default codecs and "+
		"interceptors: NACK, RTCP reports, TWCC) that publish over the room's WHIP path and play over its WHEP path with their participant "+
		"tokens as bearer credentials; the control node relays the SDP to the engine. The publishers send a clip made by ffmpeg, looped in real "+
		"time: 1280x720 H.264 constrained baseline at 25 fps and about 1.5 Mbit/s (a keyframe every 2 s, no B-frames) and 48 kHz Opus in 20 ms "+
		"packets, as a browser's camera and microphone send them. %s\n\n", where)

	fmt.Fprintf(&b, "### Join ticket -> WHEP -> first frame\n\n")
	total := collect(js.times, func(j joinTimes) time.Duration { return j.total })
	fmt.Fprintf(&b, "One participant publishes; then %d new participants, one after another, each get a fresh ticket from the backend, join "+
		"with it, subscribe to the publication, play it over WHEP and, once timed, release the session and leave. The clock starts at the join "+
		"call and stops when the last RTP packet of the first complete IDR frame is read from the subscriber's video track (every packet from "+
		"the frame's first to its marker bit, no sequence gap: a decoder could show it). Load average after the joins: %s.\n\n", len(js.times), js.load)
	fmt.Fprintf(&b, "**Ticket to first frame: p50 %s ms, p95 %s ms, p99 %s ms, max %s ms** (%d joins; nearest-rank percentiles). "+
		"Target (issue 19): p99 under 700 ms — %s.\n\n", ms(percentile(total, 0.5)), ms(percentile(total, 0.95)), ms(percentile(total, 0.99)),
		ms(percentile(total, 1)), len(total), benchdoc.Verdict(percentile(total, 0.99) < 700*time.Millisecond))
	fmt.Fprintf(&b, "Where the time goes (each phase's own distribution, so the percentiles do not add up to the total's):\n\n")
	fmt.Fprintf(&b, "| phase | what is timed | mean | p50 | p95 | p99 |\n|---|---|---|---|---|---|\n")
	for _, p := range phases {
		d := collect(js.times, p.get)
		fmt.Fprintf(&b, "| %s | %s | %s ms | %s ms | %s ms | %s ms |\n", p.name, p.what, ms(mean(d)), ms(percentile(d, 0.5)), ms(percentile(d, 0.95)),
			ms(percentile(d, 0.99)))
	}
	slowest := slices.Clone(js.times)
	slices.SortFunc(slowest, func(a, b joinTimes) int { return int(b.total - a.total) })
	var worst []string
	for _, j := range slowest[:min(3, len(slowest))] {
		var parts []string
		for _, p := range phases[:len(phases)-1] {
			parts = append(parts, p.name+" "+ms(p.get(j)))
		}
		worst = append(worst, fmt.Sprintf("%s (%s)", ms(j.total), strings.Join(parts, ", ")))
	}
	fmt.Fprintf(&b, "\nThe three slowest joins, phase by phase (ms): %s.\n\n", strings.Join(worst, "; "))

	fmt.Fprintf(&b, "### Recording six participants\n\n")
	on, off, diff := recordingCost(rec.windows)
	fmt.Fprintf(&b, "Six participants publish H.264 and Opus into the room (about 9 Mbit/s into the engine). The room's continuous recording "+
		"is started and stopped in alternating rounds in one run; in each, the engine process's own CPU (user + system, `/proc/<pid>/stat`; "+
		"not its children) is measured over %s, 3 s after the recording is `Recording` (every track's file open), and over %s with it "+
		"stopped. Each stop plans the member copies and the full-meeting MP4, which the engine renders with ffmpeg (its children); the "+
		"stopped window starts only after they are all done, so it measures the forwarding alone (composite rendering took %s after the "+
		"stops).\n\n", rec.length, rec.length, durations(rec.composites))
	fmt.Fprintf(&b, "| round | engine cores, recording | load average | engine cores, stopped | load average | difference |\n|---|---|---|---|---|---|\n")
	var diffs []float64
	for i := 0; i+1 < len(rec.windows); i += 2 {
		d := rec.windows[i].cores - rec.windows[i+1].cores
		diffs = append(diffs, d)
		fmt.Fprintf(&b, "| %d | %.3f | %s | %.3f | %s | %+.3f |\n", i/2+1, rec.windows[i].cores, rec.windows[i].load, rec.windows[i+1].cores,
			rec.windows[i+1].load, d)
	}
	fmt.Fprintf(&b, "\n**Recording six participants costs %+.3f cores** (mean %.3f with recording, %.3f without; the rounds' differences "+
		"range from %+.3f to %+.3f, so on this loaded machine the cost is at most about %.2f core). Target (issue 19): under 0.1 core — %s.\n\n",
		diff, on, off, slices.Min(diffs), slices.Max(diffs), max(diff, slices.Max(diffs)), benchdoc.Verdict(diff < 0.1 && slices.Max(diffs) < 0.1))
	var files int
	var bytes, trackMs int64
	for _, t := range rec.tracks {
		files += t.files
		bytes += t.bytes
		trackMs += t.ms
	}
	fmt.Fprintf(&b, "What was written: %d Completed track files for the %d publications (%.1f MiB, %.0f s of tracks; each publication's audio "+
		"and video in their own encodings, H.264 and Opus); ffprobe of one of them: %s.\n", files, len(rec.tracks), float64(bytes)/(1<<20),
		float64(trackMs)/1000, rec.probe)
	return b.String()
}

func collect(js []joinTimes, get func(joinTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, len(js))
	for i, j := range js {
		out[i] = get(j)
	}
	return out
}

func durations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Round(time.Second).String())
	}
	return strings.Join(parts, ", ")
}
