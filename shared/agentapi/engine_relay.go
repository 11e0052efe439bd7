package agentapi

// Node commands the agent relays to its engine's loopback control API, so
// the control plane can drive the media engine without reaching the
// engine's port. Payloads and results are the engine's own control API
// types (shared/engineapi) unless named here. Values are append-only.
const (
	// TypeEngineProxyAdd starts a pull proxy: ProxyAdd (an
	// engineapi.AddProxyRequest whose URL may be sealed away, see
	// PathCommandSecret) in, engineapi.ProxyInfo out. An existing proxy
	// with the same id answers with code proxy_exists.
	TypeEngineProxyAdd = "engine.proxy.add"
	// TypeEngineProxyRemove stops one pull proxy: ProxyRef in.
	TypeEngineProxyRemove = "engine.proxy.remove"
	// TypeEngineProxyList lists pull proxies: engineapi.ProxyList out.
	TypeEngineProxyList = "engine.proxy.list"
	// TypeEngineStreamList lists streams: StreamFilter in,
	// engineapi.StreamList out.
	TypeEngineStreamList = "engine.stream.list"
	// TypeEngineStreamClose closes a stream: engineapi.CloseStreamRequest.
	TypeEngineStreamClose = "engine.stream.close"
	// TypeEnginePlayerList lists players: PlayerFilter in,
	// engineapi.PlayerList out.
	TypeEnginePlayerList = "engine.player.list"
	// TypeEnginePlayerKick disconnects players: engineapi.KickRequest in,
	// engineapi.KickResult out.
	TypeEnginePlayerKick = "engine.player.kick"
	// TypeEngineStats reads engine statistics: engineapi.Stats out.
	TypeEngineStats = "engine.stats"
	// TypeEngineSmokeTestRTSP runs an RTSP smoke test from the engine:
	// SmokeTest (an engineapi.SmokeTestRequest whose URL may be sealed
	// away) in, engineapi.SmokeTestResult out.
	TypeEngineSmokeTestRTSP = "engine.smoke-test.rtsp"
	// TypeEngineRTPServerOpen opens a GB28181 RTP server on a leased port:
	// engineapi.OpenRTPServerRequest in, engineapi.RTPServerInfo out.
	TypeEngineRTPServerOpen = "engine.rtp-server.open"
	// TypeEngineRTPServerClose closes one: RTPServerRef in.
	TypeEngineRTPServerClose = "engine.rtp-server.close"
	// TypeEngineRecordStart starts recording a stream:
	// engineapi.StartRecordingRequest in, engineapi.RecordingInfo out. A
	// stream already recorded answers with code already_recording.
	TypeEngineRecordStart = "engine.record.start"
	// TypeEngineRecordStop stops recording a stream:
	// engineapi.StopRecordingRequest in, engineapi.RecordingInfo out; code
	// not_recording when it was not.
	TypeEngineRecordStop = "engine.record.stop"
	// TypeEngineRecordList lists what the engine records:
	// engineapi.RecordingList out.
	TypeEngineRecordList = "engine.record.list"
	// TypeEngineRecordDelete removes finished files:
	// engineapi.DeleteRecordFilesRequest in,
	// engineapi.DeleteRecordFilesResult out.
	TypeEngineRecordDelete = "engine.record.delete"
	// TypeEngineRecordScan walks the recording root again:
	// engineapi.RecordFileScanResult out.
	TypeEngineRecordScan = "engine.record.scan"
	// TypeEngineRecordCutMerge writes a cut/merge output:
	// engineapi.CutMergeRequest in, engineapi.CutMergeResult out.
	TypeEngineRecordCutMerge = "engine.record.cutmerge"
	// TypeEngineRecordComposite renders a meeting composite:
	// engineapi.CompositeRequest in, engineapi.CompositeResult out.
	TypeEngineRecordComposite = "engine.record.composite"
	// TypeEngineRecordRootProbe checks a candidate recording root without
	// writing to it: engineapi.RootProbeRequest in (Bind ignored),
	// engineapi.RootProbe out.
	TypeEngineRecordRootProbe = "engine.record.root-probe"
	// TypeEngineRecordRootValidate checks it and binds its disk identity
	// (writes the marker when it has none): engineapi.RootProbeRequest in,
	// engineapi.RootProbe out.
	TypeEngineRecordRootValidate = "engine.record.root-validate"
	// TypeEngineRecordFallbackRecover previews or moves recording files
	// from the fallback root back to the primary:
	// engineapi.FallbackRecoveryRequest in, engineapi.FallbackRecoveryResult
	// out.
	TypeEngineRecordFallbackRecover = "engine.record.fallback-recover"
	// TypeEngineRecordBrowse lists a directory under a recording root;
	// TypeEngineRecordMkdir makes one and checks it can be written:
	// engineapi.BrowseRequest in, engineapi.BrowseResult out.
	TypeEngineRecordBrowse = "engine.record.browse"
	TypeEngineRecordMkdir  = "engine.record.mkdir"
)

// RTPServerRef names one RTP server.
type RTPServerRef struct {
	ID string `json:"id"`
}

// ProxyRef names one pull proxy.
type ProxyRef struct {
	ID string `json:"id"`
}

// StreamFilter narrows a stream listing; empty fields do not filter.
type StreamFilter struct {
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app,omitempty"`
	Stream string `json:"stream,omitempty"`
}

// PlayerFilter narrows a player listing; empty fields do not filter.
type PlayerFilter struct {
	App      string `json:"app,omitempty"`
	Stream   string `json:"stream,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	LeaseID  string `json:"leaseId,omitempty"`
}
