// Package faults holds the control plane's fault suite: real `svc server`
// processes on loopback, killed with SIGKILL (the leader under write load,
// all nodes at once, a leader holding an entry no follower has), cut off
// from their quorum, recovered with `svc rejoin`, and run out of disk on
// small tmpfs volumes mounted in a private mount namespace, each test
// checking through the public API that no acknowledged write is lost, that
// the answers tell the truth meanwhile, and that the system heals without
// an operator restarting it.
//
// The tests re-run their binary under `unshare --mount` (they need root,
// as the rest of the suite does for namespaces), so the tmpfs mounts are
// private to them. `make test` runs the suite once; `make soak` runs it
// with SVC_SOAK=1, which repeats each fault many more times.
package faults
