// Package mediaengine is the media engine role (`svc engine`): RTSP and
// GB28181 ingest, HTTP-FLV, HTTP-fMP4, HLS, RTSP and WHEP output, recording,
// and hooks to the control plane. It imports nothing from controlplane/ or
// agent/.
package mediaengine
