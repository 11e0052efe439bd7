package server

import (
	"reflect"
	"testing"
)

func TestSplitDevFlags(t *testing.T) {
	def := DevMedia{HTTPAddr: "127.0.0.1:8088", RTSPAddr: "127.0.0.1:8554", ControlAddr: "127.0.0.1:8089"}
	for _, c := range []struct {
		name  string
		args  []string
		rest  []string
		media DevMedia
		fails bool
	}{
		{"none", []string{"--data-dir", "x"}, []string{"--data-dir", "x"}, def, false},
		{"separate values", []string{"--media-http-addr", "127.0.0.1:9088", "-http-addr", "127.0.0.1:9080", "-media-rtsp-addr", "127.0.0.1:9554"},
			[]string{"-http-addr", "127.0.0.1:9080"}, DevMedia{"127.0.0.1:9088", "127.0.0.1:9554", "127.0.0.1:8089"}, false},
		{"equals form", []string{"--media-control-addr=127.0.0.1:9089"}, nil, DevMedia{"127.0.0.1:8088", "127.0.0.1:8554", "127.0.0.1:9089"}, false},
		{"missing value", []string{"--media-http-addr"}, nil, def, true},
		{"not an address", []string{"--media-http-addr", "9088"}, nil, def, true},
		{"after --", []string{"--", "--media-http-addr", "x"}, []string{"--", "--media-http-addr", "x"}, def, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rest, media, err := splitDevFlags(c.args)
			if (err != nil) != c.fails {
				t.Fatalf("error %v, want failure %v", err, c.fails)
			}
			if c.fails {
				return
			}
			if !reflect.DeepEqual(rest, c.rest) || media != c.media {
				t.Fatalf("got %q %+v, want %q %+v", rest, media, c.rest, c.media)
			}
		})
	}
}
