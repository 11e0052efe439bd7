package server

import (
	"context"

	webconsole "github.com/svcplatform/svc/console"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/streams"
)

// newConsole serves the embedded web console. Its Content-Security-Policy
// lets the live view's players reach exactly the media origins playback
// URLs name: every enrolled media server's base URL, as the leases build it.
func newWebConsole(n *nodes.Service) (*webconsole.Handler, error) {
	urls := streams.MediaURLs{Nodes: n}
	return webconsole.New(webconsole.Options{MediaOrigins: func(ctx context.Context) []string {
		recs, err := n.List(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for _, r := range recs {
			if r.Status == nodes.StatusRetired || r.Engine.HTTPAddr == "" {
				continue
			}
			if u, err := urls.BaseURL(ctx, r.MediaServerID); err == nil {
				out = append(out, u)
			}
		}
		return out
	}})
}
