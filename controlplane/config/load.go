package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load builds the configuration from defaults, the file named by --config
// (or SVC_CONFIG), the environment and args, in that order of precedence
// (later wins), and validates it.
func Load(args []string, environ func(string) (string, bool), base Config, usageOut io.Writer) (Config, error) {
	cfg := base
	// Flags are parsed into a scratch copy first only to find --config.
	fs := newFlagSet(&cfg, usageOut)
	probe := cfg
	pfs := newFlagSet(&probe, io.Discard)
	pfs.Parse(args)
	file := probe.ConfigFile
	if v, ok := environ("SVC_CONFIG"); ok && file == base.ConfigFile {
		file = v
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config file %s: %w", file, err)
		}
		cfg.ConfigFile = file
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return cfg, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, ErrHelp
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}

type fieldRef struct {
	flag, env, usage string
	v                reflect.Value
}

func fields(cfg *Config) []fieldRef {
	rv := reflect.ValueOf(cfg).Elem()
	rt := rv.Type()
	var out []fieldRef
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		// svc dev's own settings exist only for svc dev.
		if f.Tag.Get("flag") == "-" || (f.Tag.Get("dev") == "true" && !cfg.Bootstrap) {
			continue
		}
		out = append(out, fieldRef{flag: f.Tag.Get("flag"), env: f.Tag.Get("env"), usage: f.Tag.Get("usage"), v: rv.Field(i)})
	}
	return out
}

func setValue(v reflect.Value, s string) error {
	switch v.Interface().(type) {
	case string:
		v.SetString(s)
	case bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case int, int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		v.SetInt(n)
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case []string:
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

func applyEnv(cfg *Config, environ func(string) (string, bool)) error {
	for _, f := range fields(cfg) {
		if f.env == "" || f.env == "SVC_CONFIG" {
			continue
		}
		if s, ok := environ(f.env); ok {
			if err := setValue(f.v, s); err != nil {
				return fmt.Errorf("config field %s (from %s): %w", f.flag, f.env, err)
			}
		}
	}
	return nil
}

// flagValue lets the flag package set any supported field type.
type flagValue struct{ v reflect.Value }

func (f flagValue) String() string {
	if !f.v.IsValid() {
		return ""
	}
	if ss, ok := f.v.Interface().([]string); ok {
		return strings.Join(ss, ",")
	}
	return fmt.Sprint(f.v.Interface())
}
func (f flagValue) Set(s string) error { return setValue(f.v, s) }
func (f flagValue) IsBoolFlag() bool   { return f.v.Kind() == reflect.Bool }

func newFlagSet(cfg *Config, out io.Writer) *flag.FlagSet {
	name := "svc server"
	if cfg.Bootstrap {
		name = "svc dev"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	for _, f := range fields(cfg) {
		fs.Var(flagValue{f.v}, f.flag, fmt.Sprintf("%s (env %s)", f.usage, f.env))
	}
	return fs
}
