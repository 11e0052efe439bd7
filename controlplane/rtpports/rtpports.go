// Package rtpports leases the RTP ports of media hosts. Each host's node
// agent owns its engine's RTP range and answers through node commands;
// this package resolves the host, sends the command and hands back the
// agent's own types, which the HTTP boundary maps to the contract.
package rtpports

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Service leases and releases RTP ports through the hosts' agents.
type Service struct {
	Servers *mediaserver.Service
}

// Change is where a lease or release ended: Outcome.Done is false when the
// wait passed first and the command goes on; otherwise Lease is the
// agent's record of the port.
type Change struct {
	Outcome mediaserver.Outcome
	Lease   agentapi.Lease
}

// List reads a host's leases with its range; it answers the node it read.
func (s *Service) List(ctx context.Context, actor audit.Actor, t mediaserver.Target, filter agentapi.ListLeasesRequest) (string, agentapi.LeaseList, error) {
	var list agentapi.LeaseList
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: t, Type: agentapi.TypeRTPList, Read: true, Actor: actor, Payload: filter}, &list)
	if err != nil {
		return "", list, err
	}
	return o.Node.NodeID, list, nil
}

// Lease takes a port of a host's range, waiting up to wait for the agent.
func (s *Service) Lease(ctx context.Context, actor audit.Actor, t mediaserver.Target, req agentapi.LeaseRequest, wait time.Duration) (Change, error) {
	return s.change(ctx, actor, t, agentapi.TypeRTPLease, req, wait)
}

// Release gives a port back, by lease id or by port.
func (s *Service) Release(ctx context.Context, actor audit.Actor, t mediaserver.Target, req agentapi.ReleaseRequest, wait time.Duration) (Change, error) {
	return s.change(ctx, actor, t, agentapi.TypeRTPRelease, req, wait)
}

func (s *Service) change(ctx context.Context, actor audit.Actor, t mediaserver.Target, typ string, payload any, wait time.Duration) (Change, error) {
	var c Change
	o, err := s.Servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Actor: actor, Wait: wait}, &c.Lease)
	c.Outcome = o
	return c, err
}
