package engines

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/mediaserver"
)

// An action that is not a process action is refused before any agent is
// asked (the service has no servers to ask).
func TestActOnProcessRefusesUnknownAction(t *testing.T) {
	s := &Service{}
	_, err := s.ActOnProcess(context.Background(), audit.Actor{}, mediaserver.Target{}, ProcessAction("engine.config.apply"), "", 0)
	if !errors.Is(err, ErrUnknownAction) {
		t.Fatalf("err = %v, want ErrUnknownAction", err)
	}
	if c, ok := fault.Of(err); !ok || c.Kind() != fault.Invalid || c.ErrorCode() != "invalid_body" {
		t.Fatalf("fault.Of(%v) = %v, %v; want Invalid invalid_body", err, c, ok)
	}
}

// A proxy is named by its path, the default vhost filled in, so a start
// on "" and on the default vhost are the same proxy.
func TestProxyIDNamesThePath(t *testing.T) {
	if a, b := ProxyID("", "live", "cam"), ProxyID("__defaultVhost__", "live", "cam"); a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if got := ProxyID("v1", "live", "cam"); got != "proxy:v1/live/cam" {
		t.Fatalf("ProxyID = %q", got)
	}
}
