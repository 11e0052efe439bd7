package agentport

import (
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

var errRateLimited = errors.New("rate limited")

// refusalLog writes refused enrollments to the log once per window: the
// first refusal of a window as it happens, then, with the next refusal
// after the window, how many more there were and from how many addresses.
// Anyone who reaches the agent port can try codes, and a line per attempt
// would let them fill the disk.
type refusalLog struct {
	log    *zap.Logger
	window time.Duration

	mu      sync.Mutex
	start   time.Time
	more    int
	clients map[string]bool
}

func (l *refusalLog) note(client string, err error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.start.IsZero() && now.Sub(l.start) < l.window {
		l.more++
		if len(l.clients) < 1000 {
			l.clients[client] = true
		}
		return
	}
	if l.more > 0 {
		l.log.Warn("enrollment attempts refused", zap.Int("more", l.more), zap.Int("addresses", len(l.clients)),
			zap.Time("since", l.start), zap.Duration("window", l.window))
	}
	l.start, l.more, l.clients = now, 0, map[string]bool{}
	l.log.Warn("enrollment refused (later refusals in this window are counted, not logged)", zap.String("client", client), zap.Error(err))
}
