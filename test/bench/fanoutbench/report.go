package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"
)

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindStringSubmatch(string(b)); m != nil {
			model = strings.TrimSpace(m[1])
		}
	}
	return fmt.Sprintf("%s, %d cores, %s", model, runtime.NumCPU(), runtime.Version())
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// largest is the largest N whose step passed, and that step.
func largest(steps []step) (int, step) {
	n, best := 0, step{}
	for _, s := range steps {
		if s.pass() {
			n, best = s.n, s
		}
	}
	return n, best
}

func report(cmd string, window time.Duration, cases []*benchCase, results [][2][]step, lat latency) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Media engine: HTTP-FLV fan-out\n\n")
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s (shared with other work while it ran)\n- Command: `%s` (from the repository root; `make bench` runs it)\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), cmd)
	fmt.Fprintf(&b, "- Set-up: `svc engine` as its own process plays a 10 s H.264+AAC clip (ffmpeg testsrc2 + sine, keyframe every 2 s, looped live) "+
		"as `live/bench`; the Go load client opens N HTTP-FLV players on loopback, reads every tag header and checks continuity "+
		"(timestamps rising, no gap longer than a frame plus the loop join). CPU is the server process's user+system time over a %s window "+
		"after 3 s of warm-up, from /proc. The floor is `fanoutbench -floor`: the same clip and the same FLV tag bytes written as one HTTP chunk "+
		"to every socket in turn, one write() per tag per socket, no hub, no queues, no per-player goroutines.\n", window)
	fmt.Fprintf(&b, "- A step passes with zero frames dropped by the engine, zero continuity breaks and no failed player seen by the client, every player "+
		"at the clip's frame rate, and the server at or under one core.\n\n")
	for i, c := range cases {
		es, fs := results[i][0], results[i][1]
		fmt.Fprintf(&b, "### %s (clip %.0f kbit/s, %s)\n\n", c.name, c.nominalKbps, c.size)
		fmt.Fprintf(&b, "| players | engine cores | engine CPU s/GB | floor cores | floor CPU s/GB | engine/floor | delivered Mbit/s | drops | breaks | failed | fps/player | client cores | other load cores | pass |\n")
		fmt.Fprintf(&b, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		for j, e := range es {
			f := fs[j]
			if e.err != nil {
				fmt.Fprintf(&b, "| %d | error: %s | | | | | | | | | | | | MISS |\n", e.n, e.err)
				continue
			}
			ratio := 0.0
			if f.cpuPerGB > 0 {
				ratio = e.cpuPerGB / f.cpuPerGB
			}
			fmt.Fprintf(&b, "| %d | %.2f | %.1f | %.2f | %.1f | %.2f | %.0f | %d | %d | %d | %.1f | %.2f | %.2f | %s |\n",
				e.n, e.cores, e.cpuPerGB, f.cores, f.cpuPerGB, ratio, e.mbps, e.dropped, e.discontinued, e.failed, e.fpsPerPlayer, e.clientCores, e.otherCores, verdict(e.pass()))
		}
		n, best := largest(es)
		fmt.Fprintf(&b, "\nLargest N with zero drops on at most one engine core: **%d**", n)
		if n > 0 {
			for j, e := range es {
				if e.n == n && fs[j].cpuPerGB > 0 {
					fmt.Fprintf(&b, " (engine %.1f CPU s/GB, %.2fx the floor's %.1f)", best.cpuPerGB, best.cpuPerGB/fs[j].cpuPerGB, fs[j].cpuPerGB)
				}
			}
		}
		fmt.Fprintf(&b, ".\n\n")
	}
	n200, best200 := largest(results[0][0])
	ratio := 0.0
	for j, e := range results[0][0] {
		if e.n == n200 && results[0][1][j].cpuPerGB > 0 {
			ratio = best200.cpuPerGB / results[0][1][j].cpuPerGB
		}
	}
	fmt.Fprintf(&b, "### Latency and memory at %d players (%s clip, fresh engine)\n\n", lat.players, cases[0].name)
	perPlayer := float64(lat.rssLoaded-lat.rssIdle) / float64(lat.players) / 1024
	fmt.Fprintf(&b, "| measurement | result | target |\n|---|--:|---|\n")
	fmt.Fprintf(&b, "| players at about 200 kbps on one engine core, zero drops | %d | >= 5,000 (%s) |\n", n200, verdict(n200 >= 5000))
	fmt.Fprintf(&b, "| engine CPU per GB vs the floor at that N | %.2fx | <= 1.5x (%s) |\n", ratio, verdict(ratio > 0 && ratio <= 1.5))
	fmt.Fprintf(&b, "| time to first frame of a player joining (50 in turn, while %d play), p50 / p99 / max | %.1f / %.1f / %.1f ms | < 50 ms (%s) |\n",
		lat.players, ms(pct(lat.ttff, 0.5)), ms(pct(lat.ttff, 0.99)), ms(pct(lat.ttff, 1)), verdict(len(lat.ttff) > 0 && pct(lat.ttff, 0.99) < 50*time.Millisecond))
	fmt.Fprintf(&b, "| frame in hub -> FLV tag written to the socket, p50 / p99 / max (%d writes) | %.2f / %.2f / %.2f ms | p99 < 2 ms (%s) |\n",
		lat.frameToWireCount, lat.frameToWireP50, lat.p99, lat.frameToWireMax, verdict(lat.frameToWireCount > 0 && lat.p99 < 2))
	fmt.Fprintf(&b, "| engine RSS idle / with %d players / per player | %.1f MiB / %.1f MiB / %.1f KiB | |\n\n",
		lat.players, float64(lat.rssIdle)/(1<<20), float64(lat.rssLoaded)/(1<<20), perPlayer)
	fmt.Fprintf(&b, "Frame-to-wire is measured inside the engine (hub arrival stamp to the return of the writev that carried the tag, live packets only); "+
		"the RTP-arrival version of this figure comes when the RTSP input is wired to the hub. The load client shares the two cores with the engine, "+
		"and its own CPU is shown per step: when the client saturates its core, players fall behind and the engine correctly starts dropping for them, "+
		"so the largest N is a floor for the engine alone.\n")
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func writeSection(path, section string) error {
	const begin, end = "<!-- fanoutbench:begin -->", "<!-- fanoutbench:end -->"
	body := begin + "\n" + section + end + "\n"
	old, _ := os.ReadFile(path)
	s := string(old)
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + body + s[j+len(end)+1:]
	} else {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += body
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
