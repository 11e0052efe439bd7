package rtspclient_test

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
)

// Helpers for the tests with real peers (ffprobe, GStreamer). A missing
// peer fails the test: install them with scripts/install-deps.sh.

func requireTool(t *testing.T, name string) string { return peers.Require(t, name) }

// probeStream is what ffprobe reports of one stream of a file.
type probeStream struct {
	Index     int    `json:"index"`
	CodecType string `json:"codec_type"`
	CodecName string `json:"codec_name"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Packets   int
	DTS       []float64
	PTS       []float64
}

// probeFormat is probe for a raw elementary stream of the given format.
func probeFormat(t *testing.T, path, format string) map[string]*probeStream {
	t.Helper()
	requireTool(t, "ffprobe")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-f", format, "-of", "json", "-count_packets",
		"-show_entries", "stream=index,codec_type,codec_name,width,height,nb_read_packets", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var res struct {
		Streams []struct {
			probeStream
			NbReadPackets string `json:"nb_read_packets"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	m := map[string]*probeStream{}
	for _, s := range res.Streams {
		ps := s.probeStream
		ps.Packets, _ = strconv.Atoi(s.NbReadPackets)
		m[ps.CodecType] = &ps
	}
	return m
}

// serveTCP runs a small TCP server on loopback for the test's lifetime;
// handle serves one connection, which is closed after it.
func serveTCP(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
