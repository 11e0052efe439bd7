// Package nodes owns the media hosts of the cluster as the control plane
// records them: one record per node agent (enrollment, certificate,
// online/offline, the supervised engine's lifecycle, retirement), the
// one-time enrollment codes, and the media.server.* events each engine
// transition writes in the same transaction. Heartbeat figures are not
// stored: presence.go keeps them in memory on every control node.
package nodes

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/pki"
)

// Key prefixes of the package.
const (
	RecordPrefix  = "/nodes/agents/"
	CodePrefix    = "/nodes/enrollment-codes/"
	RetiredPrefix = "/nodes/retired/"
)

// NodeID names a media host (its agent's enrolled identity).
type NodeID string

// Agent statuses. Append only.
const (
	// StatusPending: an enrollment code was issued; no agent enrolled yet.
	StatusPending = "pending"
	StatusOnline  = "online"
	StatusOffline = "offline"
	StatusRetired = "retired"
)

// Media server lifecycle statuses (the events' previousStatus/status).
const (
	MediaOnline  = "online"
	MediaOffline = "offline"
)

// Sentinel errors, mapped to contract codes at the boundaries.
var (
	ErrInvalid      = fault.New(fault.Invalid, "invalid_body", "invalid node request")
	ErrNotFound     = fault.New(fault.NotFound, "not_found", "no such node")
	ErrRetired      = fault.New(fault.Conflict, "node_retired", "the node is retired")
	ErrCodeRefused  = fault.New(fault.Forbidden, "permission_denied", "the enrollment code is unknown, used or expired")
	ErrSuperseded   = fault.New(fault.Forbidden, "permission_denied", "the certificate was superseded by a later enrollment of this node")
	ErrNotEnrolled  = fault.New(fault.Conflict, "agent_unavailable", "the node has no enrolled agent")
	ErrAmbiguous    = fault.New(fault.Invalid, "node_required", "several media servers exist; name one with nodeId or mediaServerId")
	ErrNoMediaHosts = fault.New(fault.Conflict, "agent_unavailable", "no media server is enrolled")
)

// Record is one media host.
type Record struct {
	NodeID        string     `json:"nodeId"`
	MediaServerID string     `json:"mediaServerId"`
	Status        string     `json:"status"`
	Hostname      string     `json:"hostname,omitempty"`
	AgentVersion  string     `json:"agentVersion,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	CreatedBy     string     `json:"createdBy"`
	EnrolledAt    *time.Time `json:"enrolledAt,omitempty"`
	// StatusChangedAt is when Status last changed.
	StatusChangedAt time.Time `json:"statusChangedAt"`
	// CertsValidFrom refuses certificates issued before the latest
	// enrollment, so a re-enrolled host's old key is worthless.
	CertsValidFrom time.Time  `json:"certsValidFrom"`
	CertSerial     string     `json:"certSerial,omitempty"`
	CertNotAfter   *time.Time `json:"certNotAfter,omitempty"`
	Engine         Engine     `json:"engine"`
	RetiredAt      *time.Time `json:"retiredAt,omitempty"`
	RetiredBy      string     `json:"retiredBy,omitempty"`
	RetireReason   string     `json:"retireReason,omitempty"`
}

// Engine is the supervised engine's lifecycle as transitions recorded it.
type Engine struct {
	// Process is the last reported process state (agentapi.Engine*).
	Process string `json:"process"`
	// Media is the media server lifecycle status the events describe.
	Media      string `json:"media"`
	PID        int    `json:"pid"`
	Version    string `json:"version,omitempty"`
	LastAction string `json:"lastAction,omitempty"`
	// EverOnline tells a first start (started) from a return (recovered).
	EverOnline bool `json:"everOnline"`
	// Unexpected is set when the engine went offline without a managed
	// stop, so its return is a recovery.
	Unexpected bool      `json:"unexpected"`
	BootID     string    `json:"bootId,omitempty"`
	Seq        int64     `json:"seq"`
	ChangedAt  time.Time `json:"changedAt"`
	// The addresses the engine last started with.
	ControlAddr string `json:"controlAddr,omitempty"`
	HTTPAddr    string `json:"httpAddr,omitempty"`
	RTSPAddr    string `json:"rtspAddr,omitempty"`
	RTPPortMin  int    `json:"rtpPortMin,omitempty"`
	RTPPortMax  int    `json:"rtpPortMax,omitempty"`
}

func recordKey(id string) string { return RecordPrefix + id }

// Service is the node registry in the replicated store.
type Service struct {
	Store store.Store
	// LocalNodeID is the control node that answers (the events' nodeId).
	LocalNodeID string
	// Propagated waits until every reachable control node applied a
	// revision, so a retirement is in force everywhere when it returns.
	Propagated func(ctx context.Context, revision int64) error
	Now        func() time.Time
	// RecordsRevision, when set, is the revision of the latest change to
	// a node record (the store's area revision of RecordPrefix); records
	// are cached while it has not moved. Without it, the store revision.
	RecordsRevision func() int64

	cache recordCache
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// DecodeRecord reads a node record as the store holds it (a watch of
// RecordPrefix hands out these key-values).
func DecodeRecord(kv *store.KeyValue) (*Record, error) { return decode(kv) }

func decode(kv *store.KeyValue) (*Record, error) {
	r, err := store.Decode[Record](kv)
	if err != nil {
		return nil, fmt.Errorf("node record %s: %w", kv.Key, err)
	}
	return &r, nil
}

// Get reads one node record.
func (s *Service) Get(ctx context.Context, id string) (*Record, error) {
	kv, _, err := store.Get(ctx, s.Store, recordKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return decode(kv)
}

// List reads every node record in node id order.
func (s *Service) List(ctx context.Context) ([]*Record, error) {
	resp, err := s.Store.Range(ctx, RecordPrefix, store.RangeOptions{End: store.PrefixEnd(RecordPrefix)})
	if err != nil {
		return nil, err
	}
	out := make([]*Record, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		r, err := decode(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out, nil
}

// Resolve picks the media host an operation targets: by node id, by media
// server id, or the only enrolled, unretired one when neither is given.
func (s *Service) Resolve(ctx context.Context, nodeID, mediaServerID string) (*Record, error) {
	if nodeID != "" {
		r, err := s.Get(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		if mediaServerID != "" && r.MediaServerID != mediaServerID {
			return nil, fmt.Errorf("%w: node %q serves media server %q, not %q", ErrInvalid, nodeID, r.MediaServerID, mediaServerID)
		}
		return r, nil
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var found []*Record
	for _, r := range all {
		if r.Status == StatusRetired || r.Status == StatusPending {
			continue
		}
		if mediaServerID == "" || r.MediaServerID == mediaServerID {
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case mediaServerID != "" && len(found) == 0:
		return nil, fmt.Errorf("%w: media server %q", ErrNotFound, mediaServerID)
	case len(found) == 0:
		return nil, ErrNoMediaHosts
	}
	return nil, ErrAmbiguous
}

// Authorize checks a verified agent certificate against its node record
// on every request: a retired node, an unknown node or a certificate issued
// before the node's latest enrollment is refused. Records are cached until
// a record changes, so a retirement applies to the next request.
func (s *Service) Authorize(ctx context.Context, nodeID string, certNotBefore time.Time) (*Record, error) {
	rev := s.Store.Revision()
	if s.RecordsRevision != nil {
		rev = s.RecordsRevision()
	}
	r, ok := s.cache.get(nodeID, rev)
	if !ok {
		kv, _, err := store.Get(ctx, s.Store, recordKey(nodeID), store.Local)
		if err != nil {
			return nil, err
		}
		if kv != nil {
			if r, err = decode(kv); err != nil {
				return nil, err
			}
		}
		s.cache.put(nodeID, rev, r)
	}
	switch {
	case r == nil:
		return nil, fmt.Errorf("%w: %q", ErrNotFound, nodeID)
	case r.Status == StatusRetired:
		return nil, fmt.Errorf("%w: %q", ErrRetired, nodeID)
	case r.EnrolledAt == nil:
		return nil, fmt.Errorf("%w: %q", ErrNotEnrolled, nodeID)
	case certNotBefore.Before(r.CertsValidFrom):
		return nil, ErrSuperseded
	}
	return r, nil
}

// ValidNodeID checks a node id from a request.
func ValidNodeID(id string) error {
	if !pki.NodeIDPattern.MatchString(id) {
		return fmt.Errorf("%w: node id %q must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid, id)
	}
	return nil
}
