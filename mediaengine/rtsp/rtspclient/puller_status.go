package rtspclient

import "time"

// PullerState is where a Puller is in its life.
type PullerState string

const (
	PullerConnecting PullerState = "connecting" // dialing, describing, setting up
	PullerPlaying    PullerState = "playing"    // frames flow
	PullerWaiting    PullerState = "waiting"    // backing off before the next attempt
	PullerStopped    PullerState = "stopped"    // Run returned
)

// PullerStatus is a Puller's state for listings.
type PullerStatus struct {
	State     PullerState
	Transport TransportMode // what the current or last session used
	Attempts  int           // sessions started
	LastError string
	Frames    uint64
	Lost      uint64
	Since     time.Time // when the current state began
}
