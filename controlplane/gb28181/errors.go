package gb28181

import "github.com/svcplatform/svc/controlplane/fault"

// Errors of the GB28181 domain. The HTTP boundary maps each to its status
// and contract code (named in the comment).
var (
	// ErrInvalid: 400 invalid_body.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid GB28181 request")
	// ErrDeviceNotFound: 404 gb28181_device_not_found.
	ErrDeviceNotFound = fault.New(fault.NotFound, "gb28181_device_not_found", "no such GB28181 device")
	// ErrDeviceOffline: 409 gb28181_device_offline.
	ErrDeviceOffline = fault.New(fault.Conflict, "gb28181_device_offline", "the GB28181 device is not online")
	// ErrDeviceUnreachable: a command the device did not accept; 502
	// gb28181_device_unreachable.
	ErrDeviceUnreachable = fault.NewRetryable(fault.BadGateway, "gb28181_device_unreachable", "the GB28181 device did not accept the command")
	// ErrManscdp: a MANSCDP body that is malformed, too large, not UTF-8,
	// GB2312 or GBK, or carries a DTD or entity declarations.
	ErrManscdp = fault.New(fault.Invalid, "invalid_body", "invalid MANSCDP body")
	// ErrDeviceID: a GB28181 code that is not 20 decimal digits.
	ErrDeviceID = fault.New(fault.Invalid, "invalid_body", "a GB28181 code is 20 decimal digits")
)
