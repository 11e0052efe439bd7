package rtc

import (
	"fmt"

	"github.com/pion/logging"
	"go.uber.org/zap"
)

// pionLogs routes pion's loggers into the engine's zap logger. pion's
// debug and trace output (per packet, per STUN check) is dropped; its info
// goes to debug, so a healthy session logs nothing at info.
type pionLogs struct{ log *zap.Logger }

func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.Named(scope).WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

type pionLogger struct{ s *zap.SugaredLogger }

func (pionLogger) Trace(string)                    {}
func (pionLogger) Tracef(string, ...any)           {}
func (pionLogger) Debug(string)                    {}
func (pionLogger) Debugf(string, ...any)           {}
func (l pionLogger) Info(msg string)               { l.s.Debug(msg) }
func (l pionLogger) Infof(format string, a ...any) { l.s.Debug(fmt.Sprintf(format, a...)) }
func (l pionLogger) Warn(msg string)               { l.s.Warn(msg) }
func (l pionLogger) Warnf(format string, a ...any) { l.s.Warn(fmt.Sprintf(format, a...)) }
func (l pionLogger) Error(msg string)              { l.s.Error(msg) }
func (l pionLogger) Errorf(format string, a ...any) {
	l.s.Error(fmt.Sprintf(format, a...))
}
