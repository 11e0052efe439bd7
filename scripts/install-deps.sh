#!/usr/bin/env bash
# Installs the Debian packages a make target needs, once, on a fresh Debian
# machine. Usage: scripts/install-deps.sh test|bench
# Each package is listed with the test or benchmark that uses it.
set -euo pipefail

case "${1:-}" in
  test)
    # The foundation's tests use only the Go toolchain and loopback. Later
    # issues add their real peers here (ffmpeg, GStreamer, SIPp, nginx,
    # Chromium).
    packages=()
    # ffmpeg (ffprobe): mediaengine's TestOutputsPlayInFFprobe reads every
    # output of the engine (HTTP-FLV, HTTP-fMP4, HLS fMP4 and TS) with it.
    packages+=(ffmpeg)
    ;;
  bench)
    # etcd-server: the store benchmark compares against etcd on loopback.
    # wrk: the load generator of the authentication benchmark.
    packages=(etcd-server wrk)
    # ffmpeg: fanoutbench encodes its 200 kbps and 2 Mbps clips with it.
    packages+=(ffmpeg)
    ;;
  *)
    echo "usage: $0 test|bench" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts etcd as a service on install; the benchmark runs its own.
if [[ " ${missing[*]} " == *" etcd-server "* ]] && command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
fi
