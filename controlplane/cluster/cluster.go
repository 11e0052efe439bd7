// Package cluster answers for the control cluster as a whole: its
// identity, this node's health and readiness, each member's health as it
// reports it over the internal link, and the parity audit that proves the
// members hold the same replicated state. It returns its own types; the
// HTTP boundary maps them to the contract.
package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// ErrUnknownCluster: a clusterId that is not this cluster's.
var ErrUnknownCluster = fault.New(fault.NotFound, "not_found", "unknown cluster id")

// IdentityKey holds the cluster's identity record, written once by the
// first leader.
const IdentityKey = "/cluster/identity"

// Identity is the stored identity of the cluster.
type Identity struct {
	ClusterID string    `json:"clusterId"`
	CreatedAt time.Time `json:"createdAt"`
}

// ID reads the cluster id ("" before the first leader wrote it).
func ID(ctx context.Context, st store.Store) string {
	id, _, err := store.GetRecord[Identity](ctx, st, IdentityKey, store.Local)
	if err != nil {
		return ""
	}
	return id.ClusterID
}

// ReadinessPrefix holds one record per node, written by the readiness
// check's database round trip (and removed by retention once the node is
// no longer a member).
const ReadinessPrefix = "/system/readiness/"

// Level is a health level.
type Level string

const (
	OK          Level = "ok"
	Degraded    Level = "degraded"
	Unavailable Level = "unavailable"
)

// Deps are what the service reads.
type Deps struct {
	Node   *raftnode.Node
	NodeID string
	// Engines counts the media servers whose engine runs now and those
	// enrolled (not retired), for the readiness check.
	Engines func(ctx context.Context) (running, enrolled int, err error)
}

// Service answers for the cluster.
type Service struct{ d Deps }

// New builds the service.
func New(d Deps) *Service { return &Service{d: d} }

// ID reads this cluster's id.
func (s *Service) ID(ctx context.Context) string { return ID(ctx, s.d.Node) }

// check rejects a clusterId that is not this cluster's ("" asks for this
// one).
func (s *Service) check(ctx context.Context, clusterID string) (string, error) {
	id := s.ID(ctx)
	if clusterID != "" && clusterID != id {
		return "", fmt.Errorf("%w: %q", ErrUnknownCluster, clusterID)
	}
	return id, nil
}
