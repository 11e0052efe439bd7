package rtc

import (
	"fmt"
	"sync"

	"github.com/pion/logging"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// pionLogs routes pion's loggers into the engine's zap logger. pion's
// debug and trace output (per packet, per STUN check) is dropped; its info
// goes to debug, so a healthy session logs nothing at info. Once the server
// has closed, the last words of peer connections winding down are dropped
// too: the engine's logger may be gone by then.
type pionLogs struct {
	log    *zap.Logger
	closed *logGate
}

// logGate lets pion log until the server closes. pion's goroutines (an
// undeclared SSRC's processor) outlive a peer connection's Close; a log
// that began before turnOff ends before turnOff returns, so none is
// written after the server's Close (a test's logger panics on that).
type logGate struct {
	mu  sync.RWMutex
	off bool
}

func (g *logGate) turnOff() {
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
}

func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.Named(scope).WithOptions(zap.AddCallerSkip(1)).Sugar(), f.closed}
}

type pionLogger struct {
	s      *zap.SugaredLogger
	closed *logGate
}

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}

func (l pionLogger) Info(msg string) { l.logf(zap.DebugLevel, "%s", msg) }

func (l pionLogger) Infof(format string, a ...any) { l.logf(zap.DebugLevel, format, a...) }

func (l pionLogger) Warn(msg string) { l.logf(zap.WarnLevel, "%s", msg) }

func (l pionLogger) Warnf(format string, a ...any) { l.logf(zap.WarnLevel, format, a...) }

func (l pionLogger) Error(msg string) { l.logf(zap.ErrorLevel, "%s", msg) }

func (l pionLogger) Errorf(format string, a ...any) { l.logf(zap.ErrorLevel, format, a...) }

func (l pionLogger) logf(level zapcore.Level, format string, a ...any) {
	l.closed.mu.RLock()
	defer l.closed.mu.RUnlock()
	if l.closed.off {
		return
	}
	l.s.Logf(level, "%s", fmt.Sprintf(format, a...))
}
