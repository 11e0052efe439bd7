// Package filesource plays a media file as a live stream: an MPEG-TS clip
// (H.264 or H.265 video, AAC audio) is demuxed once into frames and looped
// into the hub in real time, with timestamps that keep increasing across
// loops. The dev demo's channel is this source playing the clip built into
// the binary (demo.ts, 10 s of 640x360 25 fps H.264 with AAC, made with
// ffmpeg's testsrc2 and sine sources).
package filesource

import _ "embed"

// Builtin names the embedded demo clip in the engine's demoFile setting.
const Builtin = "builtin"

//go:embed demo.ts
var demoClip []byte
