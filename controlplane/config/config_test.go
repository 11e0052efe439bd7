package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPrecedenceDefaultsFileEnvFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "svc.yaml")
	os.WriteFile(file, []byte("nodeId: from-file\nhttpAddr: 127.0.0.1:9001\nraftAddr: 127.0.0.1:9301\nlogLevel: warn\ntrustedProxies: [10.0.0.0/8]\n"), 0o600)
	cfg, err := Load([]string{"--config", file, "--http-addr", "127.0.0.1:9002"},
		env(map[string]string{"SVC_RAFT_ADDR": "127.0.0.1:9302", "SVC_SHUTDOWN_GRACE": "3s", "SVC_HTTP_ADDR": "127.0.0.1:9003"}), Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != "from-file" || cfg.LogLevel != "warn" {
		t.Errorf("file values lost: %+v", cfg)
	}
	if cfg.RaftAddr != "127.0.0.1:9302" || cfg.ShutdownGrace != 3*time.Second {
		t.Errorf("env did not override file: %+v", cfg)
	}
	if cfg.HTTPAddr != "127.0.0.1:9002" {
		t.Errorf("flag did not override env: %s", cfg.HTTPAddr)
	}
	if len(cfg.TrustedProxies) != 1 || cfg.DataDir != "/var/lib/svc" {
		t.Errorf("defaults or lists wrong: %+v", cfg)
	}
	// The store's disk settings come from all three sources like the rest.
	os.WriteFile(file, []byte("raftSegmentMiB: 2\nstorageReserveMiB: 6\n"), 0o600)
	cfg, err = Load([]string{"--config", file}, env(nil), Defaults(), nil)
	if err != nil || cfg.RaftSegmentMiB != 2 || cfg.StorageReserveMiB != 6 {
		t.Fatalf("disk settings from the file: %v %+v", err, cfg)
	}
	cfg, err = Load([]string{"--config", file, "--raft-segment-mib", "3"}, env(map[string]string{"SVC_STORAGE_RESERVE_MIB": "7"}), Defaults(), nil)
	if err != nil || cfg.RaftSegmentMiB != 3 || cfg.StorageReserveMiB != 7 {
		t.Fatalf("disk settings from flag and env: %v %+v", err, cfg)
	}
	os.WriteFile(file, []byte("nodeId: from-file\n"), 0o600)
	// SVC_CONFIG selects the file too.
	cfg, err = Load(nil, env(map[string]string{"SVC_CONFIG": file}), Defaults(), nil)
	if err != nil || cfg.NodeID != "from-file" {
		t.Fatalf("SVC_CONFIG: %v %+v", err, cfg)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--node-id", "bad id"}, nil, "node-id"},
		{[]string{"--http-addr", "nohost"}, nil, "http-addr"},
		{[]string{"--raft-addr", ""}, nil, "raft-addr"},
		{[]string{"--join", "ftp://x"}, nil, "join"},
		{[]string{"--log-level", "loud"}, nil, "log-level"},
		{[]string{"--max-body-bytes", "10"}, nil, "max-body-bytes"},
		{[]string{"--trusted-proxies", "10.0.0.0/99"}, nil, "trusted-proxies"},
		{nil, map[string]string{"SVC_SHUTDOWN_GRACE": "1h"}, "shutdown-grace"},
		{nil, map[string]string{"SVC_SHUTDOWN_GRACE": "soon"}, "shutdown-grace"},
		{[]string{"--smtp-host", "mail", "--smtp-from", "nobody"}, nil, "smtp-from"},
		{[]string{"--data-dir", ""}, nil, "data-dir"},
		{[]string{"--history-retention", "5"}, nil, "history-retention"},
		{[]string{"--raft-segment-mib", "-1"}, nil, "raft-segment-mib"},
		{nil, map[string]string{"SVC_STORAGE_RESERVE_MIB": "-3"}, "storage-reserve-mib"},
		{[]string{"--gb28181-rtp-timeout", "1500ms"}, nil, "gb28181-rtp-timeout"},
		{[]string{"--gb28181-rtp-timeout", "0s"}, nil, "gb28181-rtp-timeout"},
		{nil, map[string]string{"SVC_GB28181_HOLDER_TIMEOUT": "1h"}, "gb28181-holder-timeout"},
		{[]string{"--gb28181-record-query-retention", "5m"}, nil, "gb28181-record-query-retention"},
	}
	for _, tc := range cases {
		_, err := Load(tc.args, env(tc.env), Defaults(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v does not name %s", tc.args, tc.env, err, tc.want)
		}
	}
	if _, err := Load([]string{"--nope"}, env(nil), Defaults(), nil); err == nil {
		t.Error("unknown flag accepted")
	}
	file := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(file, []byte("nodeID: typo\n"), 0o600)
	if _, err := Load([]string{"--config", file}, env(nil), Defaults(), nil); err == nil {
		t.Error("unknown file key accepted")
	}
}

// svc dev's engine settings are flags of svc dev only, checked like the
// others; svc server does not know them.
func TestDevEngineSettingsBelongToSvcDev(t *testing.T) {
	dev := Defaults()
	dev.Bootstrap, dev.DevEngineHTTPAddr, dev.DevEngineRTSPAddr, dev.DevEngineControlAddr = true, "127.0.0.1:8088", "127.0.0.1:8554", "127.0.0.1:8089"
	dev.DevEngineRTPPortMin, dev.DevEngineRTPPortMax = 30000, 30999
	cfg, err := Load([]string{"--engine-http-addr", "127.0.0.1:18088", "--engine-rtp-port-min", "41000", "--engine-rtp-port-max", "41099"},
		env(map[string]string{"SVC_DEV_ENGINE_RTSP_ADDR": "127.0.0.1:18554"}), dev, nil)
	if err != nil || cfg.DevEngineHTTPAddr != "127.0.0.1:18088" || cfg.DevEngineRTSPAddr != "127.0.0.1:18554" || cfg.DevEngineRTPPortMin != 41000 {
		t.Fatalf("svc dev: %v %+v", err, cfg)
	}
	if _, err := Load([]string{"--engine-rtsp-addr", "nonsense"}, env(nil), dev, nil); err == nil || !strings.Contains(err.Error(), "engine-rtsp-addr") {
		t.Fatalf("a bad engine address: %v", err)
	}
	if _, err := Load([]string{"--engine-http-addr", "127.0.0.1:18088"}, env(nil), Defaults(), nil); err == nil {
		t.Fatal("svc server accepted svc dev's --engine-http-addr")
	}
}
