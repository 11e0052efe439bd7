package agentapi

import (
	"time"

	"github.com/svcplatform/svc/shared/hosttuning"
)

// Node command types the agent runs. Append only; the control plane
// refuses any other type.
const (
	TypePing              = "agent.ping"
	TypeAgentRestart      = "agent.restart"
	TypeCertificateRenew  = "agent.certificate.renew"
	TypeEngineStatus      = "engine.process.status"
	TypeEngineStart       = "engine.process.start"
	TypeEngineStop        = "engine.process.stop"
	TypeEngineRestart     = "engine.process.restart"
	TypeEngineReload      = "engine.process.reload"
	TypeEngineConfigGet   = "engine.config.get"
	TypeEngineConfigPlan  = "engine.config.plan"
	TypeEngineConfigApply = "engine.config.apply"
	TypeEngineRawGet      = "engine.config.raw.get"
	TypeEngineRawPlan     = "engine.config.raw.plan"
	TypeEngineRawApply    = "engine.config.raw.apply"
	TypeEngineCoreGet     = "engine.core-settings.get"
	TypeEngineCorePut     = "engine.core-settings.put"
	TypeHostTuningGet     = "host.tuning.get"
	TypeHostTuningPlan    = "host.tuning.plan"
	TypeHostTuningApply   = "host.tuning.apply"
	TypeRTPLease          = "rtp.lease.create"
	TypeRTPRelease        = "rtp.lease.release"
	TypeRTPList           = "rtp.lease.list"
)

// CommandTypes lists every known type with whether a delivery interrupted
// by an agent crash may simply be run again (reads and operations that
// converge on a target state) or must be reported as of unknown outcome.
var CommandTypes = map[string]bool{
	TypePing: true, TypeAgentRestart: false, TypeCertificateRenew: true,
	TypeEngineStatus: true, TypeEngineStart: true, TypeEngineStop: true, TypeEngineRestart: false, TypeEngineReload: true,
	TypeEngineConfigGet: true, TypeEngineConfigPlan: true, TypeEngineConfigApply: false,
	TypeEngineRawGet: true, TypeEngineRawPlan: true, TypeEngineRawApply: false,
	TypeEngineCoreGet: true, TypeEngineCorePut: false,
	TypeHostTuningGet: true, TypeHostTuningPlan: true, TypeHostTuningApply: true,
	TypeRTPLease: false, TypeRTPRelease: true, TypeRTPList: true,
	// The engine relays: adding a proxy with a fixed id, removing, closing
	// and kicking converge on a target state; the rest are reads.
	TypeEngineProxyAdd: true, TypeEngineProxyRemove: true, TypeEngineProxyList: true, TypeEngineStreamList: true,
	TypeEngineStreamClose: true, TypeEnginePlayerList: true, TypeEnginePlayerKick: true, TypeEngineStats: true,
	TypeEngineSmokeTestRTSP: true,
	// Opening an RTP server binds a port (not repeatable); closing converges.
	TypeEngineRTPServerOpen: false, TypeEngineRTPServerClose: true,
	// Starting and stopping a recording converge (already_recording and
	// not_recording answer a repeat).
	TypeEngineRecordStart: true, TypeEngineRecordStop: true, TypeEngineRecordList: true, TypeEngineRecordDelete: true,
	// A cut/merge rewrites the same output when repeated; a scan only
	// reads (and repairs what no one writes, which a repeat finds done).
	TypeEngineRecordCutMerge: true, TypeEngineRecordScan: true,
	// A composite render joins the running one or answers the output.
	TypeEngineRecordComposite: true,
	// A probe only reads; validating again finds the marker it wrote.
	TypeEngineRecordRootProbe: true, TypeEngineRecordRootValidate: true,
	// A recovery run again finds the moved files on the primary
	// (OnPrimary) and moves what is left.
	TypeEngineRecordFallbackRecover: true,
	// A listing only reads; making a directory again finds it made.
	TypeEngineRecordBrowse: true, TypeEngineRecordMkdir: true,
}

// PingResult answers TypePing: the agent is alive and runs commands.
type PingResult struct {
	NodeID       string    `json:"nodeId"`
	AgentVersion string    `json:"agentVersion"`
	Hostname     string    `json:"hostname"`
	Time         time.Time `json:"time"`
}

// ConfigPatch is the payload of TypeEngineConfigPlan and Apply: JSON
// fields of engineapi.Config to change (a JSON merge patch, RFC 7396).
type ConfigPatch struct {
	Settings map[string]any `json:"settings"`
	// ExpectedSha256, when set, refuses the change if the file changed
	// since the caller read it.
	ExpectedSha256 string `json:"expectedSha256,omitempty"`
}

// RawConfig is the engine configuration file as text.
type RawConfig struct {
	FileName string `json:"fileName"`
	Content  string `json:"content"`
	Sha256   string `json:"sha256"`
}

// RawConfigChange is the payload of the raw plan and apply commands.
type RawConfigChange struct {
	Content        string `json:"content"`
	ExpectedSha256 string `json:"expectedSha256,omitempty"`
}

// ConfigDocument answers TypeEngineConfigGet.
type ConfigDocument struct {
	FileName string         `json:"fileName"`
	Sha256   string         `json:"sha256"`
	Settings map[string]any `json:"settings"`
	// ManagedFields are owned by the agent (identity, control secret,
	// hooks and their credentials); a change to them is refused.
	ManagedFields []string `json:"managedFields"`
}

// ConfigChange is one changed setting of a plan.
type ConfigChange struct {
	Field    string `json:"field"`
	OldValue string `json:"oldValue"`
	NewValue string `json:"newValue"`
	// RestartRequired is set when the engine applies the field only at
	// start (listen addresses, the RTP range).
	RestartRequired bool `json:"restartRequired"`
}

// ConfigPlan previews a configuration change; nothing is written.
type ConfigPlan struct {
	FileName        string         `json:"fileName"`
	CurrentSha256   string         `json:"currentSha256"`
	PlannedSha256   string         `json:"plannedSha256"`
	Changed         bool           `json:"changed"`
	Valid           bool           `json:"valid"`
	Message         string         `json:"message"`
	Changes         []ConfigChange `json:"changes"`
	Diff            string         `json:"diff"`
	RestartRequired bool           `json:"restartRequired"`
}

// ConfigApplyResult reports an applied configuration change.
type ConfigApplyResult struct {
	FileName        string         `json:"fileName"`
	Applied         bool           `json:"applied"`
	BackupFile      string         `json:"backupFile"`
	Sha256          string         `json:"sha256"`
	Reloaded        bool           `json:"reloaded"`
	RolledBack      bool           `json:"rolledBack"`
	RestartRequired bool           `json:"restartRequired"`
	Message         string         `json:"message"`
	Changes         []ConfigChange `json:"changes"`
}

// CoreSettings are the engine settings operators change most: protocols,
// latency, ports and the HTTP output.
type CoreSettings struct {
	HTTPAddr          string `json:"httpAddr"`
	RTSPAddr          string `json:"rtspAddr"`
	RTPPortMin        int    `json:"rtpPortMin"`
	RTPPortMax        int    `json:"rtpPortMax"`
	HLSFormat         string `json:"hlsFormat"`
	HLSSegmentSeconds int    `json:"hlsSegmentSeconds"`
	HLSSegments       int    `json:"hlsSegments"`
	GOPCacheMaxFrames int    `json:"gopCacheMaxFrames"`
	ReaderQueueFrames int    `json:"readerQueueFrames"`
	NoReaderTimeoutS  int    `json:"noReaderTimeoutSeconds"`
	LogLevel          string `json:"logLevel"`
}

// CoreSettingsDocument answers TypeEngineCoreGet.
type CoreSettingsDocument struct {
	Sha256   string       `json:"sha256"`
	Settings CoreSettings `json:"settings"`
}

// CoreSettingsPatch is the payload of TypeEngineCorePut; nil fields stay.
type CoreSettingsPatch struct {
	Settings struct {
		HTTPAddr          *string `json:"httpAddr,omitempty"`
		RTSPAddr          *string `json:"rtspAddr,omitempty"`
		RTPPortMin        *int    `json:"rtpPortMin,omitempty"`
		RTPPortMax        *int    `json:"rtpPortMax,omitempty"`
		HLSFormat         *string `json:"hlsFormat,omitempty"`
		HLSSegmentSeconds *int    `json:"hlsSegmentSeconds,omitempty"`
		HLSSegments       *int    `json:"hlsSegments,omitempty"`
		GOPCacheMaxFrames *int    `json:"gopCacheMaxFrames,omitempty"`
		ReaderQueueFrames *int    `json:"readerQueueFrames,omitempty"`
		NoReaderTimeoutS  *int    `json:"noReaderTimeoutSeconds,omitempty"`
		LogLevel          *string `json:"logLevel,omitempty"`
	} `json:"settings"`
	ExpectedSha256 string `json:"expectedSha256,omitempty"`
}

// TuningState answers TypeHostTuningGet (the contract's HostTuningState).
type TuningState struct {
	CanApply               bool              `json:"canApply"`
	ApplyUnavailableReason string            `json:"applyUnavailableReason"`
	Parameters             []TuningParameter `json:"parameters"`
}

// TuningParameter is one whitelisted parameter with its value on the host.
type TuningParameter struct {
	Key              string `json:"key"`
	Category         string `json:"category"`
	CurrentValue     string `json:"currentValue"`
	RecommendedValue string `json:"recommendedValue"`
	Description      string `json:"description"`
}

// TuningValues is the payload of the host tuning plan and apply commands.
type TuningValues struct {
	Values map[string]string `json:"values"`
}

// RTP lease directions and states. Append only.
const (
	DirectionReceive = "receive"
	DirectionSend    = "send"
	LeaseActive      = "active"
	LeaseReleased    = "released"
	LeaseExpired     = "expired"
)

// LeaseRequest is the payload of TypeRTPLease.
type LeaseRequest struct {
	Direction  string `json:"direction"`
	Purpose    string `json:"purpose"`
	SSRC       string `json:"ssrc,omitempty"`
	StreamID   string `json:"streamId,omitempty"`
	TTLSeconds int    `json:"ttlSeconds"`
	// Port asks for one specific port of the range; 0 picks any free one.
	Port int `json:"port,omitempty"`
}

// ReleaseRequest is the payload of TypeRTPRelease: by lease id, or by
// port (and optionally direction).
type ReleaseRequest struct {
	LeaseID   string `json:"leaseId,omitempty"`
	Port      int    `json:"port,omitempty"`
	Direction string `json:"direction,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ListLeasesRequest is the payload of TypeRTPList; empty fields match all.
type ListLeasesRequest struct {
	Status    string `json:"status,omitempty"`
	Direction string `json:"direction,omitempty"`
}

// Lease is one RTP port lease.
type Lease struct {
	LeaseID       string     `json:"leaseId"`
	NodeID        string     `json:"nodeId"`
	Port          int        `json:"port"`
	Direction     string     `json:"direction"`
	Purpose       string     `json:"purpose"`
	SSRC          string     `json:"ssrc,omitempty"`
	StreamID      string     `json:"streamId,omitempty"`
	Status        string     `json:"status"`
	CreatedAt     time.Time  `json:"createdAt"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	ReleasedAt    *time.Time `json:"releasedAt,omitempty"`
	ReleaseReason string     `json:"releaseReason,omitempty"`
}

// LeaseList answers TypeRTPList.
type LeaseList struct {
	PortMin int     `json:"portMin"`
	PortMax int     `json:"portMax"`
	Leases  []Lease `json:"rows"`
}

// TuningPlan answers TypeHostTuningPlan.
type TuningPlan struct {
	Changes int               `json:"changes"`
	Items   []hosttuning.Item `json:"items"`
}

// TuningApplyResult answers TypeHostTuningApply: every value was written,
// persisted and read back equal.
type TuningApplyResult struct {
	Applied       bool              `json:"applied"`
	Items         []hosttuning.Item `json:"items"`
	PersistedFile string            `json:"persistedFile"`
}
