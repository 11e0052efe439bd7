package httpapi

import "github.com/svcplatform/svc/api/contract"

// done is the 200 body of an operation with nothing left to return (a
// deletion, a password change, a logout): what was done, to what, in words.
func done(action contract.ActionResultAction, target, message string) contract.ActionResult {
	return contract.ActionResult{Action: action, Target: target, Message: message}
}
