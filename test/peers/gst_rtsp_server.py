#!/usr/bin/python3
"""An independent RTSP server for the engine's tests, on GStreamer's
GstRtspServer (Debian: python3-gst-1.0, gir1.2-gst-rtsp-server-1.0,
gstreamer1.0-plugins-{base,good,bad,ugly}, gstreamer1.0-libav).

Mounts (all live test sources, 320x240 at 25 fps):
  /h264      H.264 (x264, no B-frames) + AAC
  /h264b     H.264 with B-frames + AAC
  /h265      H.265 (x265) + AAC
  /pcma      H.264 + G.711 A-law
  /h265pcma  H.265 (x265) + G.711 A-law
  /tcponly   H.264 + AAC, refuses UDP (SETUP answers 461)
  /latm      H.264 + AAC as MP4A-LATM (rtpmp4apay, RFC 6416), as some cameras send it

Run with Debian's own python3 (it has gi):
  /usr/bin/python3 gst_rtsp_server.py --port 8554 [--user u --password p --auth digest|basic]
It prints "ready <port>" once listening and serves until killed.
"""
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

VIDEO = "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=25/1 ! videoconvert"
AUDIO = "audiotestsrc is-live=true wave=sine freq=440 ! audio/x-raw,rate=44100,channels=1 ! audioconvert"
X264 = "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 ! video/x-h264,profile=baseline"
X264B = "x264enc speed-preset=ultrafast bframes=2 b-adapt=false key-int-max=25 ! video/x-h264,profile=main"
X265 = "x265enc tune=zerolatency speed-preset=ultrafast key-int-max=25"
AAC = "avenc_aac ! rtpmp4gpay name=pay1 pt=97"

MOUNTS = {
    "/h264": f"( {VIDEO} ! {X264} ! rtph264pay name=pay0 pt=96 config-interval=-1 {AUDIO} ! {AAC} )",
    "/h264b": f"( {VIDEO} ! {X264B} ! rtph264pay name=pay0 pt=96 config-interval=-1 {AUDIO} ! {AAC} )",
    "/h265": f"( {VIDEO} ! {X265} ! rtph265pay name=pay0 pt=96 config-interval=-1 {AUDIO} ! {AAC} )",
    "/pcma": f"( {VIDEO} ! {X264} ! rtph264pay name=pay0 pt=96 config-interval=-1 "
             f"audiotestsrc is-live=true ! audio/x-raw,rate=8000,channels=1 ! audioconvert ! alawenc ! rtppcmapay name=pay1 pt=8 )",
    "/h265pcma": f"( {VIDEO} ! {X265} ! rtph265pay name=pay0 pt=96 config-interval=-1 "
                 f"audiotestsrc is-live=true ! audio/x-raw,rate=8000,channels=1 ! audioconvert ! alawenc ! rtppcmapay name=pay1 pt=8 )",
    "/tcponly": f"( {VIDEO} ! {X264} ! rtph264pay name=pay0 pt=96 config-interval=-1 {AUDIO} ! {AAC} )",
    # VP8 and Opus, as a WebRTC publisher sends them.
    "/vp8": f"( {VIDEO} ! vp8enc deadline=1 keyframe-max-dist=25 ! rtpvp8pay name=pay0 pt=96 "
            f"audiotestsrc is-live=true wave=sine freq=440 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! opusenc ! rtpopuspay name=pay1 pt=97 )",
    "/latm": f"( {VIDEO} ! {X264} ! rtph264pay name=pay0 pt=96 config-interval=-1 {AUDIO} ! avenc_aac ! rtpmp4apay name=pay1 pt=97 )",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--auth", choices=["digest", "basic"], default="digest")
    args = ap.parse_args()

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    mounts = server.get_mount_points()

    if args.user:
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
        if args.auth == "digest":
            auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
            auth.add_digest(args.user, args.password, token)
        else:
            auth.set_supported_methods(GstRtsp.RTSPAuthMethod.BASIC)
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(args.user, args.password), token)
        server.set_auth(auth)

    for path, launch in MOUNTS.items():
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch)
        factory.set_shared(True)
        if path == "/tcponly":
            factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
        if args.user:
            perms = GstRtspServer.RTSPPermissions()
            perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
            perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
            factory.set_permissions(perms)
        mounts.add_factory(path, factory)

    if server.attach(None) == 0:
        print("could not listen on port", args.port, file=sys.stderr)
        sys.exit(1)
    print("ready", args.port, flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
