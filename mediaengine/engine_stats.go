package mediaengine

import (
	"runtime"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Stats gathers the engine's statistics.
func (e *Engine) Stats() engineapi.Stats {
	framesIn, bytesIn, dropped := e.hub.Totals()
	calls, failures, _ := e.hooks.Load().Counters()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return engineapi.Stats{MediaServerID: e.cfg.Load().MediaServerID, UptimeSec: time.Since(e.startedAt).Seconds(),
		Streams: len(e.hub.Streams()), Players: e.players.Len(), Proxies: e.proxies.Len(), BytesIn: bytesIn,
		BytesOut: e.media.BytesOut(), FramesIn: framesIn, DroppedFrames: dropped, Goroutines: runtime.NumGoroutine(),
		HeapBytes: ms.HeapAlloc, FrameToWire: e.media.FrameToWire(), HookCalls: calls, HookFailures: failures}
}
