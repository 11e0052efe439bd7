// Package system answers the rest of the "System and health" operations:
// build and process information, the store's migration, residue and
// schema audits, the contract audit against the routes, built-in tasks,
// runtime diagnostics, listening ports and the operations e-mail test.
// Health, readiness, the cluster's members and the parity audit are
// controlplane/cluster's; the store's cleanup is controlplane/retention's.
// It knows nothing of HTTP.
package system

import (
	"context"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/tasks"
)

// Sentinel errors, mapped to contract codes at the HTTP boundary.
var (
	ErrEmailNotConfigured = fault.New(fault.Conflict, "notifications_not_configured", "operations e-mail is not configured: set smtp-host and smtp-from to enable it")
	ErrEmailFailed        = fault.NewRetryable(fault.Unavailable, "smtp_failed", "SMTP delivery failed")
	ErrInvalidEmail       = fault.New(fault.Invalid, "invalid_body", "invalid e-mail request")
)

// Route is one registered HTTP route, for the contract audit.
type Route struct {
	Method string
	Path   string // router form, /a/:b
}

// Port is one port a module of this node uses.
type Port struct {
	Module   string
	Protocol string // tcp or udp
	Address  string // host:port; for ranges the first port
	PortEnd  int
	Enabled  bool
}

// SMTP configures the operations e-mail.
type SMTP struct {
	Host, From, Username, Password string
	Port                           int
	StartTLS                       bool
}

// Deps are what the service reads.
type Deps struct {
	Node      *raftnode.Node
	NodeID    string
	APIURL    string
	StartedAt time.Time
	Spec      *openapi3.T
	Routes    func() []Route
	Tasks     *tasks.Registry
	Ports     []Port
	SMTP      SMTP
	// Retention is the store's cleanup, run by the data-retention-cleanup
	// task.
	Retention *retention.Cleaner
	// Cluster answers for the cluster's members (the console summary
	// and the parity-audit task).
	Cluster *cluster.Service
}

// Service implements the system operations.
type Service struct{ d Deps }

// New builds the service.
func New(d Deps) *Service { return &Service{d: d} }

// NodeID is the id of this control node.
func (s *Service) NodeID() string { return s.d.NodeID }

// ClusterID reads the cluster identity ("" before the first leader wrote it).
func (s *Service) ClusterID(ctx context.Context) string {
	return cluster.ID(ctx, s.d.Node)
}
