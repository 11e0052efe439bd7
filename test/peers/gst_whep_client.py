#!/usr/bin/python3
"""An independent WHEP client for the engine's tests, on GStreamer's
webrtcbin (Debian: python3-gst-1.0, gstreamer1.0-plugins-bad,
gstreamer1.0-nice, gstreamer1.0-libav).

It offers to receive H.264 video and G.711 (PCMU) audio, posts the complete
offer (no trickle) to the WHEP URL, decodes what arrives and prints one line
a second: "frames N width W height H audio A" (decoded video frames,
picture size, decoded audio buffers). After --seconds it DELETEs the
session, prints "deleted <status>" and exits.

With --bearer, every request carries "Authorization: Bearer <value>", as
standard WHIP/WHEP clients send their token (a meeting room's participant
token on the control plane's WHEP URL).

Run with Debian's own python3 (it has gi):
  /usr/bin/python3 gst_whep_client.py --url http://127.0.0.1:8088/live/cam/whep --seconds 10
"""
import argparse
import sys
import urllib.error
import urllib.parse
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402

VIDEO_CAPS = ("application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,"
              "packetization-mode=(string)1,profile-level-id=(string)42e01f")
AUDIO_CAPS = "application/x-rtp,media=audio,encoding-name=PCMU,payload=0,clock-rate=8000"


class Client:
    def __init__(self, url, seconds, bearer=None):
        self.url, self.seconds = url, seconds
        self.auth = {"Authorization": "Bearer " + bearer} if bearer else {}
        self.session = None
        self.frames, self.audio, self.width, self.height = 0, 0, 0, 0
        self.pipe = Gst.Pipeline.new("whep")
        self.webrtc = Gst.ElementFactory.make("webrtcbin", "recv")
        self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.pipe.add(self.webrtc)
        for caps in (VIDEO_CAPS, AUDIO_CAPS):
            self.webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY, Gst.Caps.from_string(caps))
        self.webrtc.connect("pad-added", self.on_pad)
        self.webrtc.connect("notify::ice-gathering-state", self.on_gathering)
        self.loop = GLib.MainLoop()

    def start(self):
        self.pipe.set_state(Gst.State.PLAYING)
        promise = Gst.Promise.new_with_change_func(self.on_offer, None)
        self.webrtc.emit("create-offer", None, promise)
        GLib.timeout_add_seconds(1, self.tick)
        self.loop.run()

    def on_offer(self, promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        if offer is None:
            print("error no offer: %s" % reply.to_string(), flush=True)
            self.loop.quit()
            return
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def on_gathering(self, *_):
        if self.webrtc.get_property("ice-gathering-state") != GstWebRTC.WebRTCICEGatheringState.COMPLETE or self.session:
            return
        offer = self.webrtc.get_property("local-description").sdp.as_text()
        req = urllib.request.Request(self.url, data=offer.encode(), method="POST", headers=dict(self.auth, **{"Content-Type": "application/sdp"}))
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = resp.read().decode()
                self.session = urllib.parse.urljoin(self.url, resp.headers["Location"])
        except urllib.error.HTTPError as e:
            print("error WHEP answered %d %s" % (e.code, e.read().decode()), flush=True)
            self.loop.quit()
            return
        except OSError as e:
            print("error WHEP request failed: %s" % e, flush=True)
            self.loop.quit()
            return
        _, sdp = GstSdp.SDPMessage.new_from_text(answer)
        desc = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        self.webrtc.emit("set-remote-description", desc, Gst.Promise.new())

    def on_pad(self, _, pad):
        if pad.get_direction() != Gst.PadDirection.SRC:
            return
        dec = Gst.ElementFactory.make("decodebin")
        dec.connect("pad-added", self.on_decoded)
        self.pipe.add(dec)
        dec.sync_state_with_parent()
        pad.link(dec.get_static_pad("sink"))

    def on_decoded(self, _, pad):
        caps = pad.get_current_caps().to_string()
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("signal-handoffs", True)
        sink.set_property("sync", False)
        if caps.startswith("video/"):
            s = pad.get_current_caps().get_structure(0)
            self.width, self.height = s.get_value("width"), s.get_value("height")
            sink.connect("handoff", self.on_frame)
        else:
            sink.connect("handoff", self.on_audio)
        self.pipe.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))

    def on_frame(self, *_):
        self.frames += 1

    def on_audio(self, *_):
        self.audio += 1

    def tick(self):
        print("frames %d width %d height %d audio %d" % (self.frames, self.width, self.height, self.audio), flush=True)
        self.seconds -= 1
        if self.seconds > 0:
            return True
        if self.session:
            req = urllib.request.Request(self.session, method="DELETE", headers=self.auth)
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    print("deleted %d" % resp.status, flush=True)
            except urllib.error.HTTPError as e:
                print("deleted %d" % e.code, flush=True)
        self.loop.quit()
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--bearer")
    a = p.parse_args()
    Gst.init(None)
    Client(a.url, a.seconds, a.bearer).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
