// Package agent is the node agent role (`svc agent`) of a media host: it
// enrolls with a one-time code, then over mTLS polls its node commands,
// reports heartbeats, supervises the media engine process and owns the
// host's RTP ports, disks and tuning. It talks to the control plane only
// through the wire types in shared/ and never imports controlplane/.
package agent
