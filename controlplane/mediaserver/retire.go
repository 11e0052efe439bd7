package mediaserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
)

// Reference kinds (the contract's MediaServerReferenceGroup.kind).
const (
	RefOpenCommands = "open-node-commands"
	RefRTPLeases    = "active-rtp-port-leases"
	RefStreams      = "active-streams"
	RefPlayers      = "connected-players"
	RefTemplates    = "transcoder-templates"
)

// RefGroup is one kind of reference.
type RefGroup struct {
	Kind     string
	Count    int
	Samples  []string
	Blocking bool
}

// References is what refers to one media server.
type References struct {
	Node   *nodes.Record
	Total  int
	Groups []RefGroup
}

// Blocking reports whether a reference stops a retirement without force.
func (r References) Blocking() bool {
	for _, g := range r.Groups {
		if g.Blocking && g.Count > 0 {
			return true
		}
	}
	return false
}

// Message summarises the references for an operator.
func (r References) Message() string {
	var parts []string
	for _, g := range r.Groups {
		if g.Count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", g.Count, g.Kind))
		}
	}
	if len(parts) == 0 {
		return "nothing refers to this media server; it can be retired"
	}
	if r.Blocking() {
		return "still referenced by " + strings.Join(parts, ", ") + "; retire with force to cancel or cut them"
	}
	return "referenced by " + strings.Join(parts, ", ") + ", none of which blocks retirement"
}

// References counts what refers to a media server; sampleSize bounds the
// identifiers listed per kind. Streams, players and leases come from the
// agent's latest heartbeat.
func (s *Service) References(ctx context.Context, mediaServerID string, sampleSize int) (References, error) {
	rec, err := s.Nodes.ByMediaServer(ctx, mediaServerID)
	if err != nil {
		return References{}, err
	}
	out := References{Node: rec}
	open := RefGroup{Kind: RefOpenCommands, Blocking: true, Samples: []string{}}
	for _, st := range []string{nodecommand.Pending, nodecommand.Dispatched, nodecommand.Running} {
		rows, total, err := s.Commands.List(ctx, nodecommand.Filter{NodeID: rec.NodeID, Status: st}, 1, max(sampleSize, 1))
		if err != nil {
			return References{}, err
		}
		open.Count += int(total)
		for _, r := range rows {
			if len(open.Samples) < sampleSize {
				open.Samples = append(open.Samples, r.CommandID)
			}
		}
	}
	out.Groups = append(out.Groups, open)
	hb, _, seen := s.Presence.Last(rec.NodeID)
	leases, streams, players := 0, 0, 0
	if seen && rec.Status == nodes.StatusOnline {
		leases, streams, players = hb.ActiveLeases, hb.Engine.Streams, hb.Engine.Players
	}
	out.Groups = append(out.Groups,
		RefGroup{Kind: RefRTPLeases, Count: leases, Blocking: true, Samples: []string{}},
		RefGroup{Kind: RefStreams, Count: streams, Blocking: true, Samples: []string{}},
		RefGroup{Kind: RefPlayers, Count: players, Blocking: true, Samples: []string{}})
	tpl := RefGroup{Kind: RefTemplates, Samples: []string{}}
	if s.Templates != nil {
		names, err := s.Templates(ctx, rec.MediaServerID)
		if err != nil {
			return References{}, err
		}
		tpl.Count = len(names)
		tpl.Samples = names[:min(len(names), sampleSize)]
	}
	out.Groups = append(out.Groups, tpl)
	for _, g := range out.Groups {
		out.Total += g.Count
	}
	return out, nil
}

// RetireResult is what a retirement did or would do.
type RetireResult struct {
	References       References
	Retired          bool
	CanceledCommands int
	Message          string
}

// Retire previews or retires a media server and its node. Blocking
// references refuse it unless forced; forced, its open commands are
// canceled.
func (s *Service) Retire(ctx context.Context, actor audit.Actor, mediaServerID string, preview, force bool, reason string) (RetireResult, error) {
	refs, err := s.References(ctx, mediaServerID, 20)
	if err != nil {
		return RetireResult{}, err
	}
	res := RetireResult{References: refs}
	if refs.Node.Status == nodes.StatusRetired {
		res.Retired, res.Message = true, "already retired"
		if preview {
			return res, nil
		}
		return res, fmt.Errorf("%w: %q", nodes.ErrRetired, refs.Node.NodeID)
	}
	if preview {
		res.Message = "preview: " + refs.Message()
		return res, nil
	}
	if strings.TrimSpace(reason) == "" {
		return res, fmt.Errorf("%w: a reason is required to retire", nodes.ErrInvalid)
	}
	if refs.Blocking() && !force {
		return res, fmt.Errorf("%w: %s", ErrReferenced, refs.Message())
	}
	if _, err := s.Nodes.Retire(ctx, actor, refs.Node.NodeID, reason); err != nil {
		return res, err
	}
	res.Retired = true
	var errs []error
	for _, st := range []string{nodecommand.Pending, nodecommand.Dispatched, nodecommand.Running} {
		rows, _, err := s.Commands.List(ctx, nodecommand.Filter{NodeID: refs.Node.NodeID, Status: st}, 1, 200)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range rows {
			if _, err := s.Commands.Cancel(ctx, actor, r.CommandID, "media server retired"); err == nil {
				res.CanceledCommands++
			} else if !errors.Is(err, nodecommand.ErrFinished) {
				errs = append(errs, err)
			}
		}
	}
	s.Presence.Forget(refs.Node.NodeID)
	res.Message = fmt.Sprintf("retired node %s; its certificates are refused on every control node", refs.Node.NodeID)
	return res, errors.Join(errs...)
}
