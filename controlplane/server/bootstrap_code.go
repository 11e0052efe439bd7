package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/httpapi"
)

// newBootstrapCode is 160 random bits in base32: the one-time code that
// stands in for a loopback connection on the first administrator's
// bootstrap, for hosts without a local shell. It lives only in this
// process and is useless once an administrator exists.
func newBootstrapCode() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b), nil
}

// announceBootstrap prints the bootstrap code once the node has caught up
// with the cluster and no administrator exists yet.
func (s *Server) announceBootstrap(ctx context.Context) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.Node.LinearizableBarrier(cctx)
		var required bool
		if err == nil {
			required, err = s.Accounts.BootstrapRequired(cctx)
		}
		cancel()
		if err == nil {
			if required {
				s.Log.Warn("no administrator exists yet: create one with POST /api/v2/auth/bootstrap from this host, "+
					"or from elsewhere with this one-time code in the "+httpapi.BootstrapCodeHeader+" header",
					zap.String("bootstrapCode", s.bootstrapCode))
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
