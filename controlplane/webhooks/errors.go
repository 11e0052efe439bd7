package webhooks

import (
	"errors"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/fault"
)

// Sentinel errors of the webhooks package; the HTTP boundary maps each to
// its contract code.
var (
	// ErrInvalid (400 invalid_body): a field of a delivery plan breaks a
	// rule of contract A's table.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid delivery plan")
	// ErrTargetRefused (400 webhook_target_not_allowed): the endpoint
	// resolves to a loopback, link-local or cloud-metadata address and
	// private targets are not allowed.
	ErrTargetRefused = fault.New(fault.Invalid, "webhook_target_not_allowed", "webhook endpoint address not allowed")
	// ErrNotFound (404 not_found): no such plan, delivery or event.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "not found")
	// ErrNameTaken (409 webhook_name_conflict): another plan has the name.
	ErrNameTaken = fault.New(fault.Conflict, "webhook_name_conflict", "a delivery plan with this name exists")
	// ErrArchived (409 subscription_archived): the plan is archived, which
	// is final.
	ErrArchived = fault.New(fault.Conflict, "subscription_archived", "the delivery plan is archived")
	// ErrNotRetryable (409 delivery_not_retryable): only Failed deliveries
	// can be retried by an operator.
	ErrNotRetryable = fault.New(fault.Conflict, "delivery_not_retryable", "nothing to retry")
)

func errorsIsNotFound(err error) bool { return errors.Is(err, events.ErrNotFound) }
