// Package logging builds the one structured logger every role uses (zap) and
// adapts libraries that bring their own logging interface onto it.
package logging

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a JSON logger at level ("debug", "info", "warn", "error")
// writing to stderr, with the node id on every line.
func New(level, nodeID string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "ts"
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.Lock(os.Stderr), zap.NewAtomicLevelAt(lvl))
	l := zap.New(core, zap.AddCaller())
	if nodeID != "" {
		l = l.With(zap.String("node", nodeID))
	}
	return l, nil
}
