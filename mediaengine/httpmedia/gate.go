package httpmedia

import (
	"context"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Gate decides whether a player may play: the on_play hook. An error means
// no decision (timeout, control plane unreachable) and refuses the player.
type Gate interface {
	AllowPlay(ctx context.Context, req engineapi.PlayHook) (engineapi.HookAnswer, error)
}
