package rtsp

import (
	"errors"
	"fmt"
)

// Errors of the package. A Handler returns (or wraps) ErrNotFound,
// ErrForbidden or ErrUnauthorized to choose the status the client gets;
// any other error answers 500.
var (
	ErrMessageTooLarge = errors.New("rtsp: message too large")
	ErrMalformed       = errors.New("rtsp: malformed message")
	ErrBadTransport    = errors.New("rtsp: bad Transport header")
	ErrBadSDP          = errors.New("rtsp: bad session description")
	ErrNotFound        = errors.New("rtsp: stream not found")
	ErrForbidden       = errors.New("rtsp: forbidden")
	ErrUnauthorized    = errors.New("rtsp: authentication failed")
	// ErrBasicRefused: the server asks only for Basic authentication, which
	// would send the password readable to anyone on the path of a plain
	// rtsp:// connection, and the source did not opt in (AllowBasicAuth).
	ErrBasicRefused = fmt.Errorf("%w: the server asks for Basic authentication, which sends the password in clear over plain rtsp://; "+
		"the source must opt in to allow it", ErrUnauthorized)
	ErrNoTracks     = errors.New("rtsp: no playable track")
	ErrUDPTimeout   = errors.New("rtsp: no packets over UDP")
	ErrTimeout      = errors.New("rtsp: no data from the peer")
	ErrTrackStalled = errors.New("rtsp: a track stopped giving frames")
	ErrClosed       = errors.New("rtsp: closed")
)

// StatusError is a response whose status is not 2xx.
type StatusError struct {
	Method string
	Code   int
	Reason string
	// Location is where a redirect (3xx) points.
	Location string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("rtsp: %s answered %d %s", e.Method, e.Code, e.Reason)
}

// Is lets errors.Is(err, ErrUnauthorized) and friends match a status.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Code == StatusUnauthorized
	case ErrNotFound:
		return e.Code == StatusNotFound
	case ErrForbidden:
		return e.Code == StatusForbidden
	}
	return false
}

// Status codes the package uses (RFC 2326 section 7.1.1).
const (
	StatusOK                    = 200
	StatusBadRequest            = 400
	StatusUnauthorized          = 401
	StatusForbidden             = 403
	StatusNotFound              = 404
	StatusMethodNotAllowed      = 405
	StatusNotAcceptable         = 406
	StatusSessionNotFound       = 454
	StatusMethodNotValidInState = 455
	StatusAggregateNotAllowed   = 459
	StatusUnsupportedTransport  = 461
	StatusInternalServerError   = 500
	StatusNotImplemented        = 501
	StatusServiceUnavailable    = 503
	StatusVersionNotSupported   = 505
)

// StatusText returns the reason phrase for a status code.
func StatusText(code int) string {
	switch code {
	case StatusOK:
		return "OK"
	case StatusBadRequest:
		return "Bad Request"
	case StatusUnauthorized:
		return "Unauthorized"
	case StatusForbidden:
		return "Forbidden"
	case StatusNotFound:
		return "Not Found"
	case StatusMethodNotAllowed:
		return "Method Not Allowed"
	case StatusNotAcceptable:
		return "Not Acceptable"
	case StatusSessionNotFound:
		return "Session Not Found"
	case StatusMethodNotValidInState:
		return "Method Not Valid in This State"
	case StatusAggregateNotAllowed:
		return "Aggregate Operation Not Allowed"
	case StatusUnsupportedTransport:
		return "Unsupported Transport"
	case StatusInternalServerError:
		return "Internal Server Error"
	case StatusNotImplemented:
		return "Not Implemented"
	case StatusServiceUnavailable:
		return "Service Unavailable"
	case StatusVersionNotSupported:
		return "RTSP Version Not Supported"
	}
	return "Status " + fmt.Sprint(code)
}
