// Package system answers for this control node as a process: its build
// and version, its roles, the console's overview, runtime diagnostics, the
// ports its modules listen on and the operations e-mail test; it also
// registers the built-in tasks every control node offers. Health,
// readiness, the cluster's members and the parity audit are
// controlplane/cluster's; the store's cleanup is controlplane/retention's,
// its audits controlplane/storeaudit's; the task registry is
// controlplane/tasks; the contract's audits are controlplane/contractaudit.
// It knows nothing of HTTP.
package system

import (
	"context"
	"time"

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
