package channels

import "fmt"

// PTZ says why PTZ control of ch cannot run: RTSP carries no PTZ at all,
// and the ONVIF and GB28181 device integrations that will carry it are not
// installed yet. It returns nil once a protocol gains PTZ.
func PTZ(ch *Channel) error {
	switch ch.Protocol {
	case ProtocolRTSP:
		return fmt.Errorf("%w: channel %s is an RTSP source, which has no PTZ control; add the camera as an ONVIF or GB28181 channel for PTZ", ErrPTZNotSupported, ch.ChannelID)
	default:
		return fmt.Errorf("%w: PTZ of %s channels needs the %s device integration, which is not installed on this platform yet", ErrPTZUnavailable, ch.Protocol, ch.Protocol)
	}
}
