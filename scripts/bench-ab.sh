#!/usr/bin/env bash
# bench-ab.sh REF [BENCH...]: runs the control-plane benchmarks of REF (a
# commit) and of the working tree one after the other, alternating, on this
# machine, and prints where each run's section was written. A regression is
# judged on runs made minutes apart on one machine, not on figures from
# another day. Default benches: channelbench storebench authbench leasebench.
# whepbench is the working tree's for both sides, given each side's engine
# (-svc), since what it compares is the engine's forwarding.
set -euo pipefail
ref=${1:?usage: scripts/bench-ab.sh REF [BENCH...]}
shift
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(channelbench storebench authbench leasebench)
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/old" "$ref" >/dev/null
for b in "${benches[@]}"; do
	if [ "$b" = whepbench ]; then
		(cd "$work/old" && go build -o "$work/old-svc" ./cmd/svc)
		(cd "$root" && go build -o "$work/new-svc" ./cmd/svc && go build -o "$work/whepbench" ./test/bench/whepbench)
		continue
	fi
	(cd "$work/old" && go build -o "$work/old-$b" "./test/bench/$b")
	(cd "$root" && go build -o "$work/new-$b" "./test/bench/$b")
done
for round in 1 2; do
	for b in "${benches[@]}"; do
		for side in old new; do
			dir=$root
			[ "$side" = old ] && dir=$work/old
			out=/tmp/bench-ab-$b-$side-$round.md
			if [ "$b" = whepbench ]; then
				(cd "$root" && "$work/whepbench" -svc "$work/$side-svc" -out "$out" >/dev/null)
			else
				(cd "$dir" && "$work/$side-$b" -out "$out" >/dev/null)
			fi
			echo "$b $side round $round: $out (load $(cut -d' ' -f1 /proc/loadavg))"
		done
	done
done
