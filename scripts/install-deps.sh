#!/usr/bin/env bash
# Installs the Debian packages a make target needs, once, on a fresh Debian
# machine. Usage: scripts/install-deps.sh test|bench|console
# Each package is listed with the test or benchmark that uses it.
set -euo pipefail

# node_packages names Debian's nodejs and npm when the node or npm command
# is missing; a Node.js already installed (another packaging of it included)
# is kept.
node_packages() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo nodejs npm
  fi
}

# check_node fails when Node.js is older than the console's build tools
# need (Vite 8: 20.19 or later).
check_node() {
  command -v node >/dev/null 2>&1 || return 0
  if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
    echo "Node.js $(node --version) is too old for the console's build (Vite 8 needs 20.19 or later)" >&2
    exit 1
  fi
}

case "${1:-}" in
  test)
    # The real peers the tests start on loopback (a test whose peer is
    # missing fails; none is skipped).
    packages=()
    # ffmpeg (ffmpeg, ffprobe): mediaengine/rtsp/rtspserver TestServerPublishAndPlayWithFFmpeg
    # publishes into the RTSP server and reads back; ffprobe checks the result.
    packages+=(ffmpeg)
    # GStreamer's RTSP server (test/peers/gst_rtsp_server.py, run by Debian's
    # /usr/bin/python3): mediaengine/rtsp/rtspclient TestPuller* pull from it.
    # x264enc is in -ugly, x265enc in -bad, avenc_aac in gstreamer1.0-libav.
    packages+=(python3 python3-gi python3-gst-1.0 gir1.2-gst-rtsp-server-1.0 gstreamer1.0-rtsp
      gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
      gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav)
    # systemd: systemd-analyze verify checks the agent's unit
    # (agent TestUnitPassesSystemdAnalyzeVerify).
    # util-linux: unshare -n makes the network namespaces of the host
    # tuning tests (agent/hosttune TestApplyInNetworkNamespace, test/e2e
    # TestHostTuningThroughAgentInNetworkNamespace).
    # iproute2: ip link set lo up inside that namespace (test/e2e).
    # util-linux also gives unshare --mount to the fault suite (test/faults),
    # whose disk-full tests mount small tmpfs volumes in a private namespace.
    # gstreamer1.0-nice and gir1.2-gst-plugins-bad-1.0 (webrtcbin and its
    # Python bindings): the independent WHEP client test/peers/gst_whep_client.py
    # of mediaengine's TestAcceptanceWHEPPlaysInGStreamer.
    packages+=(gstreamer1.0-nice gir1.2-gst-plugins-bad-1.0)
    packages+=(systemd util-linux iproute2)
    # nginx: the reverse proxy on the same host that forwards a remote
    # client's bootstrap (test/adversarial TestAttack06BootstrapBehindAReverseProxy).
    packages+=(nginx)
    # sip-tester (SIPp): the GB28181 devices of controlplane/gb28181's tests
    # (registration, keep-alive, catalog, INVITE/BYE). The GB28181 media sender
    # (test/peers/psrtp) uses GStreamer's mpegpsmux (-bad) and ffmpeg from above.
    packages+=(sip-tester)
    # curl and git: test/e2e TestReadmeCommandsRun runs the README's command
    # blocks (curl, ffmpeg, ffprobe, python3 as their webhook receiver);
    # test TestNoTrackedFileRefersOutsideTheRepository lists files with git.
    packages+=(curl git)
    # ffmpeg (ffprobe) also serves mediaengine's TestOutputsPlayInFFprobe,
    # which reads every output of the engine (HTTP-FLV, HTTP-fMP4, HLS).
    # ffmpeg, ffprobe and the GStreamer peer above also serve mediaengine's
    # TestAcceptance* (the whole engine with real publishers, sources and
    # players: mediaengine/acceptance_*_test.go).
    # chromium: the web console's browser test (test/consolerun
    # TestConsoleInABrowser drives it with Playwright; node and npm come
    # from the console mode below), the WHEP viewer of mediaengine's
    # TestAcceptanceWHEPPlaysInChromium (headless, driven by its page), and
    # the MSE player of test/mseplay and e2e TestRecordingPlaysInChromiumMSE.
    packages+=(chromium)
    packages+=($(node_packages))
    ;;
  console)
    # Node.js and npm build the web console (make console, and make test's
    # console-check that rebuilds it and compares with console/dist).
    packages=($(node_packages))
    ;;
  bench)
    # chromium (and Node.js): consolebench measures the console's first
    # load in the browser; glassbench plays WHEP in it; recseekbench plays
    # recorded fMP4 in it over MSE.
    packages=(chromium $(node_packages))
    # etcd-server: the store benchmark compares against etcd on loopback.
    # wrk: the load generator of the authentication benchmark.
    packages+=(etcd-server wrk)
    # ffmpeg: rtspbench encodes its clip and publishes it into the RTSP server;
    # glassbench encodes its stamped frames and decodes HTTP-FLV with it.
    # ffmpeg: fanoutbench encodes its 200 kbps and 2 Mbps clips with it;
    # recwritebench and recseekbench compare against ffmpeg -c copy.
    packages+=(ffmpeg)
    # GStreamer (x264enc, avenc_aac, mpegpsmux) and SIPp: gbbench's PS
    # stream and its GB28181 camera.
    packages+=(gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
      gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav sip-tester)
    ;;
  *)
    echo "usage: $0 test|bench|console" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  check_node
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts etcd as a service on install; the benchmark runs its own.
if [[ " ${missing[*]} " == *" etcd-server "* ]] && command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
fi
check_node
