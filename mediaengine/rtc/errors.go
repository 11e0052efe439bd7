package rtc

import (
	"errors"
	"net/http"
)

// Error is a refusal with the code and HTTP status a WHIP/WHEP client
// receives; every error the server answers with is one of these.
type Error struct {
	Status int
	Code   string
	Msg    string
}

func (e *Error) Error() string { return "rtc: " + e.Msg }

// Errors of the signalling endpoints.
var (
	ErrUnsupportedMediaType = &Error{http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be application/sdp"}
	ErrInvalidSDP           = &Error{http.StatusBadRequest, "invalid_sdp", "the offer is not a valid SDP offer"}
	ErrNoICECredentials     = &Error{http.StatusBadRequest, "invalid_sdp", "the offer has no ICE credentials (a=ice-ufrag and a=ice-pwd)"}
	ErrNoFingerprint        = &Error{http.StatusBadRequest, "invalid_sdp", "the offer has no DTLS fingerprint"}
	ErrNoCommonCodec        = &Error{http.StatusBadRequest, "no_common_codec", "none of the offered codecs can carry this stream"}
	ErrSessionNotFound      = &Error{http.StatusNotFound, "session_not_found", "no such WebRTC session"}
	ErrInvalidFragment      = &Error{http.StatusBadRequest, "invalid_sdp_fragment", "the body is not an SDP fragment with ICE candidates"}
	ErrICERestart           = &Error{http.StatusUnprocessableEntity, "ice_restart_unsupported", "ICE restart is not supported; start a new session"}
	ErrTooManySessions      = &Error{http.StatusServiceUnavailable, "too_many_sessions", "the engine has as many WebRTC sessions as it is configured for"}
	ErrClosed               = &Error{http.StatusServiceUnavailable, "webrtc_unavailable", "the WebRTC server is closed"}
	ErrBodyTooLarge         = &Error{http.StatusRequestEntityTooLarge, "body_too_large", "the SDP body is larger than 64 KiB"}
)

// asError finds the Error in err's chain.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
