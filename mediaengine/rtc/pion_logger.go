package rtc

import (
	"fmt"
	"sync/atomic"

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
	closed *atomic.Bool
}

func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.Named(scope).WithOptions(zap.AddCallerSkip(1)).Sugar(), f.closed}
}

type pionLogger struct {
	s      *zap.SugaredLogger
	closed *atomic.Bool
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
	if l.closed.Load() {
		return
	}
	l.s.Logf(level, "%s", fmt.Sprintf(format, a...))
}
