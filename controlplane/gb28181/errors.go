package gb28181

import "errors"

// Errors of the GB28181 domain. The HTTP boundary maps each to its status
// and contract code (named in the comment).
var (
	// ErrInvalid: 400 invalid_body.
	ErrInvalid = errors.New("invalid GB28181 request")
	// ErrDeviceNotFound: 404 gb28181_device_not_found.
	ErrDeviceNotFound = errors.New("no such GB28181 device")
	// ErrDeviceOffline: 409 gb28181_device_offline.
	ErrDeviceOffline = errors.New("the GB28181 device is not online")
	// ErrManscdp: a MANSCDP body that is malformed, too large, not UTF-8,
	// GB2312 or GBK, or carries a DTD or entity declarations.
	ErrManscdp = errors.New("invalid MANSCDP body")
	// ErrDeviceID: a GB28181 code that is not 20 decimal digits.
	ErrDeviceID = errors.New("a GB28181 code is 20 decimal digits")
)
