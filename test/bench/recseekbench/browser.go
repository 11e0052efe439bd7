package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/mediaengine/recordplay"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/mseplay"
	"github.com/svcplatform/svc/test/peers/chromium"
)

// withCORS answers Access-Control-Allow-Origin: * as the engine's media
// port does for /record/, so the player page (another origin) may read
// the answer.
func withCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		next.ServeHTTP(w, r)
	})
}

// browserTimes are the plays of headless Chromium: key shows the
// answer's first frame (the keyframe at or before S), exact seeks to S,
// span asks for 2 s only (&duration=2), local shows the first frame of
// such an answer read into memory before the clock starts (the browser's
// own share), unpaced is key from a handler that sends the rest of the
// file as fast as the connection takes it (as before pacing).
type browserTimes struct {
	key, exact, span, local, unpaced []mseplay.Result
	// paced are the keyframe plays of each other pacing (-pace).
	paced            [][]mseplay.Result
	version          string
	loadBefore, load string
	warmup           int
}

// browserPlayers has one headless Chromium play n time-addressed answers
// at random points of random files in each of the five ways, in turn,
// after a few plays not counted (the browser's first media pipeline).
func browserPlayers(rec *recorder.Recorder, base, unpacedBase string, files []recorder.FileInfo, n int, dir string, paces []pacing) (browserTimes, error) {
	res := browserTimes{version: chromium.Version(), loadBefore: loadAverage(), warmup: 3, paced: make([][]mseplay.Result, len(paces))}
	if err := mseplay.CheckChromium(); err != nil {
		return res, err
	}
	h, err := mseplay.Serve()
	if err != nil {
		return res, err
	}
	defer h.Close()
	browser := exec.Command(chromium.Path, h.BrowserArgs(filepath.Join(dir, "chromium"))...)
	var output strings.Builder
	browser.Stdout, browser.Stderr = &output, &output
	if err := browser.Start(); err != nil {
		return res, fmt.Errorf("chromium: %w", err)
	}
	defer benchdoc.Stop(browser)
	id := 0
	const key, exact, span, local, unpaced = 0, 1, 2, 3, 4
	play := func(kind int) (mseplay.Result, error) {
		b := base
		if kind >= 5 { // the keyframe kind under another pacing
			b, kind = paces[kind-5].base, key
		}
		f := files[rand.IntN(len(files))]
		at := rand.Float64() * (f.Duration - 5*time.Second).Seconds()
		_, x, err := rec.Lookup(f.FileID)
		if err != nil {
			return mseplay.Result{}, err
		}
		// The answer starts at the keyframe part at or before at.
		keyAt := time.Duration(0)
		for _, p := range x.Parts {
			if p.At > time.Duration(at*1e9) {
				break
			}
			if p.Key {
				keyAt = p.At
			}
		}
		id++
		if kind == unpaced {
			b = unpacedBase
		}
		u := fmt.Sprintf("%s%s.mp4?start=%.3f", b, f.FileID, at)
		if kind == span || kind == local {
			u += "&duration=2"
		}
		r, err := h.Play(mseplay.Job{ID: id, URL: u, Start: at, Exact: kind == exact, After: at - keyAt.Seconds(), Preload: kind == local,
			TimeoutMs: 30000}, 90*time.Second)
		if err != nil {
			return r, fmt.Errorf("%w (Chromium: %s)", err, tailString(output.String(), 2000))
		}
		return r, nil
	}
	for i := range res.warmup {
		if _, err := play(i % 5); err != nil {
			return res, err
		}
	}
	kinds := []int{key, unpaced, exact, span, local}
	for i := range paces {
		kinds = append(kinds, 5+i)
	}
	for range n {
		for _, kind := range kinds {
			r, err := play(kind)
			if err != nil {
				return res, err
			}
			switch kind {
			case key:
				res.key = append(res.key, r)
			case exact:
				res.exact = append(res.exact, r)
			case span:
				res.span = append(res.span, r)
			case unpaced:
				res.unpaced = append(res.unpaced, r)
			case local:
				res.local = append(res.local, r)
			default:
				res.paced[kind-5] = append(res.paced[kind-5], r)
			}
		}
	}
	res.load = loadAverage()
	return res, nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// ms picks one time of each result, sorted.
func ms(rs []mseplay.Result, of func(mseplay.Result) float64) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, of(r))
	}
	slices.Sort(out)
	return out
}

func pctf(v []float64, p int) float64 { return v[min(len(v)*p/100, len(v)-1)] }

// browserSection is the browser's section of docs/benchmarks.md.
func browserSection(b browserTimes, total time.Duration, nfiles int, command string) string {
	var w strings.Builder
	fmt.Fprintf(&w, "## Recorded playback: time to first frame in Chromium over MSE (recseekbench)\n\n%s, headless Chromium %s. `%s`, %s; "+
		"load average (1, 5, 15 min) %s before the plays, %s after.\n\n", benchdoc.Machine(), b.version, command,
		time.Now().UTC().Format("2006-01-02 15:04 MST"), b.loadBefore, b.load)
	fmt.Fprintf(&w, "- A recording made as for the seek and cut/merge section (%s in %d files, 1280x720 25 fps H.264 with a keyframe every 2 s, + AAC), served by the "+
		"engine's `recordplay` handler on loopback with the media port's `Access-Control-Allow-Origin: *`.\n", total, nfiles)
	fmt.Fprintf(&w, "- One headless Chromium (`--headless=new --disable-gpu`, software decoding and compositing) runs test/mseplay's page, "+
		"served from this process on another loopback port: per play a new `<video>` and `MediaSource`, `fetch` of "+
		"`/record/{fileId}.mp4?start=S` (S random in a random file), the SourceBuffer made when the moov is in (codecs from avcC and "+
		"mp4a), every chunk appended as it arrives, currentTime put at the start of what is buffered and `play()`. Times from the "+
		"request; the first frame is the first `requestVideoFrameCallback`. %d plays of each kind, in turn, after %d not counted "+
		"(the browser's first media pipeline).\n", len(b.key), b.warmup)
	fmt.Fprintf(&w, "- Keyframe: the answer's first frame is shown (the keyframe at or before S, what `?start=` returns). Exact: currentTime is "+
		"put at S itself (the keyframe's media time plus S minus the keyframe's time in the file, from the file's index), so the "+
		"frames from the keyframe to S are decoded and not shown (up to 2 s of them here); timed to the first frame presented at S. Span: the keyframe kind asking for 2 s only "+
		"(`&duration=2`), as a player fetching the recording in short spans does; the other kinds get the rest of the file (minutes): "+
		"its first %s of media at once and the rest at %dx real time (recordplay's pacing), or, for the unpaced row, all of it as "+
		"fast as loopback carries it (a handler with `Unpaced`, as the engine answered before pacing, alternating with the paced one). "+
		"Floor: the span kind's answer read whole into memory before the clock starts and appended "+
		"from there: the browser's own append, decode and presentation, without the server and HTTP.\n\n", recordplay.PaceBurst,
		recordplay.PaceFactor)
	fmt.Fprintf(&w, "| measure | p50 ms | p95 ms | p99 ms | max ms | target |\n|---|--:|--:|--:|--:|---|\n")
	row := func(name string, v []float64, target string) {
		fmt.Fprintf(&w, "| %s | %.0f | %.0f | %.0f | %.0f | %s |\n", name, pctf(v, 50), pctf(v, 95), pctf(v, 99), pctf(v, 100), target)
	}
	key := ms(b.key, func(r mseplay.Result) float64 { return r.FrameMs })
	exact := ms(b.exact, func(r mseplay.Result) float64 { return r.ExactMs })
	row("Chromium first frame, keyframe", key, fmt.Sprintf("p99 < 300 ms (%s)", benchdoc.Verdict(pctf(key, 99) < 300)))
	unp := ms(b.unpaced, func(r mseplay.Result) float64 { return r.FrameMs })
	row("Chromium first frame, keyframe, unpaced (before)", unp, fmt.Sprintf("p99 < 300 ms (%s)", benchdoc.Verdict(pctf(unp, 99) < 300)))
	row("Chromium first frame at S (exact seek)", exact, fmt.Sprintf("p99 < 300 ms (%s)", benchdoc.Verdict(pctf(exact, 99) < 300)))
	span := ms(b.span, func(r mseplay.Result) float64 { return r.FrameMs })
	row("Chromium first frame, keyframe, `&duration=2`", span, fmt.Sprintf("p99 < 300 ms (%s)", benchdoc.Verdict(pctf(span, 99) < 300)))
	row("floor: the `&duration=2` answer already in memory", ms(b.local, func(r mseplay.Result) float64 { return r.FrameMs }), "")
	fmt.Fprintf(&w, "\nWhere the keyframe plays' time goes: the rest of the file paced, unpaced, and `&duration=2` (each column sorted on its "+
		"own, so the rows do not add up):\n\n")
	fmt.Fprintf(&w, "| stage (from the request) | paced p50 ms | paced p99 ms | unpaced p50 ms | unpaced p99 ms | 2 s p50 ms | 2 s p99 ms |\n"+
		"|---|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range []struct {
		name string
		of   func(mseplay.Result) float64
	}{
		{"response headers", func(r mseplay.Result) float64 { return r.HeadersMs }},
		{"first body bytes", func(r mseplay.Result) float64 { return r.FirstByteMs }},
		{"init segment in (SourceBuffer made)", func(r mseplay.Result) float64 { return r.InitMs }},
		{"first fragment in (moof + whole mdat)", func(r mseplay.Result) float64 { return r.FragmentMs }},
		{"first fragment appended (updateend)", func(r mseplay.Result) float64 { return r.AppendedMs }},
		{"first frame presented", func(r mseplay.Result) float64 { return r.FrameMs }},
		{"first frame minus first fragment appended", func(r mseplay.Result) float64 { return r.FrameMs - r.AppendedMs }},
	} {
		fmt.Fprintf(&w, "| %s |", s.name)
		v, u, sp := ms(b.key, s.of), ms(b.unpaced, s.of), ms(b.span, s.of)
		fmt.Fprintf(&w, " %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", pctf(v, 50), pctf(v, 99), pctf(u, 50), pctf(u, 99), pctf(sp, 50), pctf(sp, 99))
	}
	frag := ms(b.key, func(r mseplay.Result) float64 { return float64(r.FragmentBytes) })
	fmt.Fprintf(&w, "\nThe first fragment (init, moof, mdat) is a median %.0f KB. Codecs read from the init segment: %s.\n\n", pctf(frag, 50)/1024,
		b.key[0].Codecs)
	floor := ms(b.local, func(r mseplay.Result) float64 { return r.FrameMs })
	fragIn := ms(b.key, func(r mseplay.Result) float64 { return r.FragmentMs })
	fmt.Fprintf(&w, "Reading it: the server's share is the first four stage rows (the whole first fragment in the page by %.0f ms at the median "+
		"when paced); the rest is Chromium's append, decode and presentation, which the in-memory floor alone puts at %.0f ms (p50) "+
		"and %.0f ms (p99) on this machine at this load. Unpaced, the rest of the file arrived as fast as loopback carries it and "+
		"the browser parsed and appended it while it should have been showing the first frame: p50 %.0f ms against %.0f ms paced and "+
		"%.0f ms for a 2 s span. The tails follow the machine's load (the load average above, on 2 cores, against the floor's p99): "+
		"where the floor misses 300 ms, so does every row, whatever the server does.\n\n",
		pctf(fragIn, 50), pctf(floor, 50), pctf(floor, 99), pctf(unp, 50), pctf(key, 50), pctf(span, 50))
	return w.String()
}

// pacing is one burst:factor setting of -pace and where it is served.
type pacing struct {
	burst  time.Duration
	factor int
	base   string
}

func parsePaces(v string) ([]pacing, error) {
	var out []pacing
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		b, f, ok := strings.Cut(s, ":")
		burst, err := time.ParseDuration(b)
		factor, ferr := strconv.Atoi(f)
		if !ok || err != nil || ferr != nil || burst <= 0 || factor <= 0 {
			return nil, fmt.Errorf("%q is not burst:factor", s)
		}
		out = append(out, pacing{burst: burst, factor: factor})
	}
	return out, nil
}

// paceComparison prints the keyframe plays' first frame and first
// fragment times under the handler's pacing, each -pace one, unpaced and
// for a 2 s span.
func paceComparison(b browserTimes, paces []pacing) string {
	var w strings.Builder
	fmt.Fprintf(&w, "\nPacing compared (keyframe plays, %d each, in turn; load %s before, %s after):\n\n", len(b.key), b.loadBefore, b.load)
	fmt.Fprintf(&w, "| pacing | first frame p50 ms | p95 ms | p99 ms | max ms | first fragment in p50 ms | p99 ms |\n|---|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, rs []mseplay.Result) {
		v := ms(rs, func(r mseplay.Result) float64 { return r.FrameMs })
		f := ms(rs, func(r mseplay.Result) float64 { return r.FragmentMs })
		fmt.Fprintf(&w, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", name, pctf(v, 50), pctf(v, 95), pctf(v, 99), pctf(v, 100), pctf(f, 50), pctf(f, 99))
	}
	row(fmt.Sprintf("%s burst, %dx (the handler's)", recordplay.PaceBurst, recordplay.PaceFactor), b.key)
	for i, p := range paces {
		row(fmt.Sprintf("%s burst, %dx", p.burst, p.factor), b.paced[i])
	}
	row("unpaced", b.unpaced)
	row("`&duration=2`", b.span)
	row("floor (in memory)", b.local)
	return w.String()
}
