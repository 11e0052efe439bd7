package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

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

func ratio(a, b step) float64 {
	if a.err != nil || b.err != nil || b.cpuPerGB == 0 {
		return 0
	}
	return a.cpuPerGB / b.cpuPerGB
}

func report(cmd string, window time.Duration, cases []*benchCase, results [][3][]step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Media engine: HTTP-FLV fan-out\n\n")
	fmt.Fprintf(
		&b,
		"- Date: %s\n- Machine: %s (shared with other work while it ran; the \"other load\" column is the rest of the machine)\n- Command: `%s` "+
			"(from the repository root; `make bench` runs it)\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		benchdoc.Machine(),
		cmd,
	)
	fmt.Fprintf(&b, "- Set-up: `svc engine` as its own process plays a 10 s H.264+AAC clip (ffmpeg testsrc2 + sine, keyframe every 2 s, looped live) "+
		"as `live/bench`; the Go load client opens N HTTP-FLV players on loopback, reads every tag header and checks continuity "+
		"(timestamps rising, no gap longer than a frame plus the loop join). CPU is each server process's user+system time over a %s window "+
		"after 3 s of warm-up, from /proc. Three servers are measured at each N in turn: the engine with `mergeWrite: %s` (each player woken "+
		"at most once per window and written with one writev; ZLMediaKit's mergeWriteMS), the engine with `mergeWrite: 0` (the default: every "+
		"frame written as it arrives), and the floor, `fanoutbench -floor`: the same clip and the same FLV tag bytes written as one HTTP chunk "+
		"to every socket in turn, one write() per tag per socket, no hub, no queues, no per-player goroutines.\n", window, mergeWrite)
	fmt.Fprintf(&b, "- A step passes with zero frames dropped by the engine, zero continuity breaks and no failed player seen by the client, every player "+
		"at the clip's frame rate, and the server at or under one core. The ladder stops at the merged engine's first failed step; a step that "+
		"failed while other processes took more than half a core is measured again, at most twice.\n\n")
	for i, c := range cases {
		ms, ps, fs := results[i][0], results[i][1], results[i][2]
		fmt.Fprintf(&b, "### %s (clip %.0f kbit/s, %s)\n\n", c.name, c.nominalKbps, c.size)
		fmt.Fprintf(
			&b,
			"| players | merged: cores | CPU s/GB | pass (retries) | plain: cores | CPU s/GB | pass | floor: cores | CPU s/GB | merged/floor | "+
				"plain/floor | delivered Mbit/s | drops (merged/plain) | breaks | client cores | other load cores |\n",
		)
		fmt.Fprintf(&b, "|--:|--:|--:|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for j, m := range ms {
			p, f := ps[j], fs[j]
			if m.err != nil {
				fmt.Fprintf(&b, "| %d | error: %s | | MISS | | | | | | | | | | | | |\n", m.n, m.err)
				continue
			}
			fmt.Fprintf(&b, "| %d | %.2f | %.1f | %s (%d) | %.2f | %.1f | %s | %.2f | %.1f | %.2f | %.2f | %.0f | %d/%d | %d/%d/%d | %.2f | %.2f |\n",
				m.n, m.cores, m.cpuPerGB, benchdoc.Verdict(m.pass()), m.retries, p.cores, p.cpuPerGB, benchdoc.Verdict(p.pass()), f.cores, f.cpuPerGB,
				ratio(m, f), ratio(p, f), m.mbps, m.dropped, p.dropped, m.discontinued, p.discontinued, f.discontinued, m.clientCores, m.otherCores)
		}
		n, _ := largest(ms)
		np, _ := largest(ps)
		fmt.Fprintf(&b, "\nLargest N with zero drops on at most one engine core: **%d** with merged writes, %d writing every frame at once.\n\n", n, np)
	}
	n200, _ := largest(results[0][0])
	worst := 0.0
	for j, p := range results[0][1] {
		worst = max(worst, ratio(p, results[0][2][j]))
	}
	fmt.Fprintf(&b, "### Targets\n\n| measurement | result | target |\n|---|--:|---|\n")
	fmt.Fprintf(&b, "| players at about 200 kbps on one engine core, zero drops (merged writes) | %d | >= 5,000 (%s) |\n", n200, benchdoc.Verdict(n200 >= 5000))
	fmt.Fprintf(
		&b,
		"| engine CPU per GB vs the floor, worst step at about 200 kbps, writing every frame | %.2fx | <= 1.5x (%s) |\n\n",
		worst,
		benchdoc.Verdict(worst > 0 && worst <= 1.5),
	)
	fmt.Fprintf(
		&b,
		"fall below the frame rate; the command's output shows the floor's fps per player), so its CPU per GB at those steps is that of a server "+
			"falling behind, and the like-for-like comparison is at the smaller N. "+
			"The load client shares the two cores with the engine, and its own CPU is shown per step: when the client saturates its core, players "+
			"fall behind and the engine correctly starts dropping for them, so the largest N is a floor for the engine alone. "+
			"Latency and memory at 1,000 players are the next section (the same command, or `-latency-only` for that section alone).\n",
	)
	return b.String()
}

// reportLatency is the latency and memory section.
func reportLatency(cmd string, c *benchCase, lat latency) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Media engine: latency and memory at %d HTTP-FLV players\n\n", lat.players)
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s (shared with other work while it ran)\n- Command: `%s` (from the repository root; `make bench` runs it)\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), benchdoc.Machine(), cmd)
	fmt.Fprintf(&b, "- Set-up: fresh `svc engine` processes with `mergeWrite: 0` playing the %s clip of the fan-out section; the Go load client's players on loopback. "+
		"Memory per player is what %d more players add to an engine already serving %d (both figures in the same steady state, with the runtime collecting all the time); "+
		"the idle figures are the least over 5 s after 3 s of start-up and still hold start-up garbage the engine has not collected yet, so they "+
		"are not a baseline.\n\n", c.name, lat.players, lat.players)
	perPlayer := float64(lat.rssDouble-lat.rssLoaded) / float64(lat.players) / 1024
	heapPerPlayer := (float64(lat.heapDouble) - float64(lat.heapLoaded)) / float64(lat.players) / 1024
	fmt.Fprintf(&b, "| measurement | result | target |\n|---|--:|---|\n")
	fmt.Fprintf(
		&b,
		"| time to first frame of a player joining (%d in turn, while %d play), p50 / p99 / max | %.1f / %.1f / %.1f ms | < 50 ms (%s) |\n",
		len(
			lat.ttff,
		),
		lat.players,
		msOf(pct(lat.ttff, 0.5)),
		msOf(pct(lat.ttff, 0.99)),
		msOf(pct(lat.ttff, 1)),
		benchdoc.Verdict(len(lat.ttff) > 0 && pct(lat.ttff, 0.99) < 50*time.Millisecond),
	)
	fmt.Fprintf(&b, "| frame in hub -> FLV tag written, %d players, p50 / p99 / max (%d writes) | %.2f / %.2f / %.2f ms | p99 < 2 ms (%s) |\n",
		fewPlayers, lat.few.Count, lat.few.P50Ms, lat.few.P99Ms, lat.few.MaxMs, benchdoc.Verdict(lat.few.Count > 0 && lat.few.P99Ms < 2))
	fmt.Fprintf(&b, "| same, %d players, p50 / p99 / max (%d writes) | %.2f / %.2f / %.2f ms | |\n",
		lat.players, lat.many.Count, lat.many.P50Ms, lat.many.P99Ms, lat.many.MaxMs)
	fmt.Fprintf(&b, "| floor: time to write one tag to all %d sockets, p50 / p99 (%d tags) | %.2f / %.2f ms | |\n",
		lat.players, lat.floorSpread.Count, lat.floorSpread.P50Ms, lat.floorSpread.P99Ms)
	fmt.Fprintf(&b, "| engine RSS idle / with %d players / with %d / per added player | %.1f MiB / %.1f MiB / %.1f MiB / %.1f KiB | |\n",
		lat.players, 2*lat.players, float64(lat.rssIdle)/(1<<20), float64(lat.rssLoaded)/(1<<20), float64(lat.rssDouble)/(1<<20), perPlayer)
	fmt.Fprintf(&b, "| engine Go heap (its statistics) idle / with %d players / with %d / per added player | %.1f MiB / %.1f MiB / %.1f MiB / %.1f KiB | |\n\n",
		lat.players, 2*lat.players, float64(lat.heapIdle)/(1<<20), float64(lat.heapLoaded)/(1<<20), float64(lat.heapDouble)/(1<<20), heapPerPlayer)
	fmt.Fprintf(&b, "Frame-to-wire is measured inside the engine (hub arrival stamp to the return of the writev that carried the tag, live packets only); "+
		"latencybench measures it from the RTP packet's arrival. With many players it is bounded below by the time the "+
		"kernel takes for that many socket writes on two cores, which the floor's spread shows. "+
		"The joining players' time to first frame needs a few hundred joins for its p99 to be more than the single worst one.\n")
	return b.String()
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
