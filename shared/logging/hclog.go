package logging

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// HCLog adapts zap to hashicorp's hclog interface so raft and raft-wal log
// through the same pipeline as the rest of the process.
func HCLog(l *zap.Logger, name string) hclog.Logger {
	return &hcAdapter{z: l.Named(name).WithOptions(zap.AddCallerSkip(2)), name: name}
}

type hcAdapter struct {
	z       *zap.Logger
	name    string
	implied []any
}

func fields(args []any) []zap.Field {
	fs := make([]zap.Field, 0, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			fs = append(fs, zap.Any("EXTRA_VALUE", args[i]))
			break
		}
		fs = append(fs, zap.Any(fmt.Sprint(args[i]), args[i+1]))
	}
	return fs
}

func zapLevel(l hclog.Level) zapcore.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return zapcore.DebugLevel
	case hclog.Warn:
		return zapcore.WarnLevel
	case hclog.Error:
		return zapcore.ErrorLevel
	}
	return zapcore.InfoLevel
}

func (h *hcAdapter) Log(level hclog.Level, msg string, args ...any) {
	if ce := h.z.Check(zapLevel(level), msg); ce != nil {
		ce.Write(fields(args)...)
	}
}
func (h *hcAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hcAdapter) IsTrace() bool                 { return false }
func (h *hcAdapter) IsDebug() bool                 { return h.z.Core().Enabled(zapcore.DebugLevel) }
func (h *hcAdapter) IsInfo() bool                  { return h.z.Core().Enabled(zapcore.InfoLevel) }
func (h *hcAdapter) IsWarn() bool                  { return h.z.Core().Enabled(zapcore.WarnLevel) }
func (h *hcAdapter) IsError() bool                 { return h.z.Core().Enabled(zapcore.ErrorLevel) }
func (h *hcAdapter) ImpliedArgs() []any            { return h.implied }
func (h *hcAdapter) With(args ...any) hclog.Logger {
	return &hcAdapter{z: h.z.With(fields(args)...), name: h.name, implied: append(append([]any(nil), h.implied...), args...)}
}
func (h *hcAdapter) Name() string { return h.name }
func (h *hcAdapter) Named(name string) hclog.Logger {
	return &hcAdapter{z: h.z.Named(name), name: h.name + "." + name, implied: h.implied}
}
func (h *hcAdapter) ResetNamed(name string) hclog.Logger {
	return &hcAdapter{z: h.z.Named(name), name: name, implied: h.implied}
}
func (h *hcAdapter) SetLevel(hclog.Level) {}
func (h *hcAdapter) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}
func (h *hcAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(nil), "", 0)
}
func (h *hcAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return stdWriter{h} }

type stdWriter struct{ h *hcAdapter }

// Write classifies lines of the form "[LEVEL] message" the way hclog does.
func (w stdWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := hclog.Info
	for prefix, l := range map[string]hclog.Level{"[DEBUG]": hclog.Debug, "[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error, "[INFO]": hclog.Info} {
		if strings.HasPrefix(line, prefix) {
			level, line = l, strings.TrimSpace(strings.TrimPrefix(line, prefix))
			break
		}
	}
	w.h.Log(level, line)
	return len(p), nil
}
