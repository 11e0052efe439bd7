// Package playback hands players short-lived access to media without ever
// giving them an API token: one-time playback URLs and renewable playback
// leases whose URLs carry an `svc_ticket`, and the decision the engine's
// on_play hook asks for. A ticket is bound by a MAC to its lease (or
// one-time grant) and to the stream it plays, so a tampered or cross-stream
// ticket fails without a lookup; the lease record then decides whether it
// still counts (state, sliding and absolute expiry, and whether the API
// token that created it is still valid and still holds its permission).
package playback

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Store layout.
const (
	LeasesPrefix  = "/playback/leases/"
	oneTimePrefix = "/playback/onetime/"
)

// LeaseIndex lets the sweeper find live leases without reading them all.
var LeaseIndex = query.Index{Name: "playback_leases", Prefix: LeasesPrefix, Columns: []query.Column{
	{Name: "state", Type: "TEXT", Path: "$.state"},
	{Name: "token_id", Type: "TEXT", Path: "$.tokenId"},
	{Name: "permission", Type: "TEXT", Path: "$.permission"},
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "ends_at_ms", Type: "INTEGER", Path: "$.endsAtMs"},
	{Name: "absolute_expires_at", Type: "TEXT", Path: "$.absoluteExpiresAt"},
	{Name: "cut_requested", Type: "INTEGER", Path: "$.cutRequested"},
	{Name: "cut_done", Type: "INTEGER", Path: "$.cutDone"},
	{Name: "ended_at", Type: "TEXT", Path: "$.endedAt"},
}}

// ResourceKind is what a lease plays. Values are the contract's.
type ResourceKind string

const (
	KindLive           ResourceKind = "live"
	KindRecordingFile  ResourceKind = "recording-file"
	KindCutMergeOutput ResourceKind = "cut-merge-output"
	// KindGBPlayback is a GB28181 history playback session (a live stream
	// while it lasts; the lease ends with the session).
	KindGBPlayback ResourceKind = "gb28181-playback"
)

// recorded reports whether the kind plays from the recorded-playback route.
func (k ResourceKind) recorded() bool { return k == KindRecordingFile || k == KindCutMergeOutput }

// Protocol is a playback protocol of the contract.
type Protocol string

const (
	ProtoFLV  Protocol = "http-flv"
	ProtoFMP4 Protocol = "http-fmp4"
	ProtoHLS  Protocol = "hls"
	// ProtoRTSP is our addition to the contract's three, for VLC and NVR
	// software; its ticket is checked by the same on_play.
	ProtoRTSP Protocol = "rtsp"
	// ProtoWebRTC is WHEP playback (our addition too): the URL takes an
	// SDP offer, and its ticket is checked by the same on_play. It is
	// issued only when asked for, as it needs the media server's WebRTC
	// UDP (or ICE-TCP) port reachable from the viewer.
	ProtoWebRTC Protocol = "webrtc"
)

// AllProtocols is the default when a request names none: the contract's
// three, then RTSP (WebRTC only when asked for).
var AllProtocols = []Protocol{ProtoFLV, ProtoFMP4, ProtoHLS, ProtoRTSP}

// Lease states. Only Active plays; the others are the contract's
// playback_lease_conflict conditions.
const (
	StateActive  = "Active"
	StateExpired = "Expired"
	StateRevoked = "Revoked"
)

// Limits of contract B.
const (
	MinLeaseSeconds     = 60
	MaxLeaseSeconds     = 600
	DefaultLeaseSeconds = 120
	MaxAbsoluteSeconds  = 43200
	MinLinkSeconds      = 30
	DefaultLinkSeconds  = 120
	renewAfterFraction  = 0.7
)

// Errors mapped to contract codes at the boundary.
var (
	ErrInvalid        = fault.New(fault.Invalid, "invalid_body", "invalid request")
	ErrNotFound       = fault.New(fault.NotFound, "not_found", "not found")
	ErrStreamNotReady = fault.New(fault.Conflict, "stream_not_ready", "the stream is not online")
	ErrLeaseConflict  = fault.New(fault.Conflict, "playback_lease_conflict", "the lease is expired, revoked or at its absolute lifetime")
	// ErrPermissionDenied is the creating token asking about its lease
	// without the lease's permission any more (contract B: 403
	// permission_denied; renewal cannot extend revoked permission).
	ErrPermissionDenied = fault.New(fault.Forbidden, "permission_denied", "permission denied")
)

// Lease is a renewable grant to play one resource with some protocols.
type Lease struct {
	LeaseID       string       `json:"leaseId"`
	ResourceKind  ResourceKind `json:"resourceKind"`
	ResourceID    string       `json:"resourceId"`
	MediaServerID string       `json:"mediaServerId"`
	Vhost         string       `json:"vhost"`
	App           string       `json:"app"`
	Stream        string       `json:"stream"`
	Protocols     []Protocol   `json:"protocols"`
	// TokenID is the API token that created the lease: only it may read,
	// renew or delete the lease, and the lease plays only while it is valid
	// and holds Permission.
	TokenID           string     `json:"tokenId"`
	Permission        string     `json:"permission"`
	LeaseSeconds      int        `json:"leaseSeconds"`
	CreatedAt         time.Time  `json:"createdAt"`
	ExpiresAt         time.Time  `json:"expiresAt"`
	RenewAfter        time.Time  `json:"renewAfter"`
	AbsoluteExpiresAt time.Time  `json:"absoluteExpiresAt"`
	RenewCount        int        `json:"renewCount"`
	State             string     `json:"state"`
	EndedAt           *time.Time `json:"endedAt,omitempty"`
	EndReason         string     `json:"endReason,omitempty"`
	// CutRequested is set when the end of the lease must also cut the
	// connections already playing it (expiry and permission loss always
	// do; a DELETE only when asked).
	CutRequested bool `json:"cutRequested,omitempty"`
	// CutDone is set once the engine confirmed the cut.
	CutDone bool `json:"cutDone,omitempty"`
	// EndsAtMs is, on an Active lease, the earlier of ExpiresAt and
	// AbsoluteExpiresAt in Unix milliseconds, rounded down; ended leases
	// have none. It is the index column the sweeper finds leases past their
	// time by, without reading the others. MarshalJSON writes it, so no
	// write path can leave it behind the lease's times or state.
	EndsAtMs int64 `json:"endsAtMs,omitempty"`
}

// MarshalJSON stores the lease with EndsAtMs computed from its state and
// times.
func (l Lease) MarshalJSON() ([]byte, error) {
	type record Lease
	r := record(l)
	r.EndsAtMs = 0
	if l.State == StateActive && !l.ExpiresAt.IsZero() && !l.AbsoluteExpiresAt.IsZero() {
		r.EndsAtMs = earliest(l.ExpiresAt, l.AbsoluteExpiresAt).UnixMilli()
	}
	return json.Marshal(r)
}

// Playable reports whether the lease admits players at t.
func (l *Lease) Playable(t time.Time) bool {
	return l.State == StateActive && t.Before(l.ExpiresAt) && t.Before(l.AbsoluteExpiresAt)
}

// allows reports whether the lease covers protocol p.
func (l *Lease) allows(p Protocol) bool {
	for _, v := range l.Protocols {
		if v == p {
			return true
		}
	}
	return false
}

func putLease(l *Lease) (store.Op, error) {
	b, err := json.Marshal(l)
	return store.Put(LeasesPrefix+l.LeaseID, b), err
}

// Get reads a lease with its mod revision.
func (s *Service) Get(ctx context.Context, id string) (*Lease, int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, 0, fmt.Errorf("%w: lease %q", ErrNotFound, id)
	}
	kv, _, err := store.Get(ctx, s.Store, LeasesPrefix+id, store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil {
		return nil, 0, fmt.Errorf("%w: lease %q", ErrNotFound, id)
	}
	l, err := store.Decode[Lease](kv)
	return &l, kv.ModRevision, err
}

// normalizeProtocols checks a requested list; empty means all of them.
func normalizeProtocols(in []string) ([]Protocol, error) {
	if len(in) == 0 {
		return append([]Protocol(nil), AllProtocols...), nil
	}
	seen := map[Protocol]bool{}
	var out []Protocol
	for _, p := range in {
		proto := Protocol(strings.ToLower(strings.TrimSpace(p)))
		switch proto {
		case ProtoFLV, ProtoFMP4, ProtoHLS, ProtoRTSP, ProtoWebRTC:
		default:
			return nil, fmt.Errorf("%w: protocol %q is not one of http-flv, http-fmp4, hls, rtsp, webrtc", ErrInvalid, p)
		}
		if !seen[proto] {
			seen[proto] = true
			out = append(out, proto)
		}
	}
	return out, nil
}
