package channels

import (
	"encoding/json"
	"testing"
)

// FuzzTransferDocument: import documents come from the network. Decoding
// one and turning each channel into an Input never panics, and a masked
// source never reaches a new channel as credentials.
func FuzzTransferDocument(f *testing.F) {
	for _, s := range []string{
		`{"format":"svc.channels.asset-transfer","version":1,"groups":[{"groupKey":"g","name":"G"}],"channels":[` +
			`{"name":"a","protocol":"rtsp","app":"live","stream":"a","sourceUrl":"rtsp://***@h/a","hasSourceCredentials":true,"groupKey":"g"}]}`,
		`{"format":"svc.channels.asset-transfer","version":1,"groups":[],"channels":[` +
			`{"name":"b","protocol":"gb28181","app":"rtp","stream":"b","deviceId":"34020000001110000001","deviceChannelId":"34020000001320000001"}]}`,
		`{"channels":[{"sourceUrl":"rtsp://u:p@h/x"},{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc TransferDocument
		if json.Unmarshal(raw, &doc) != nil {
			return
		}
		_ = checkDocument(&doc)
		for i := range doc.Channels {
			in, _, err := transferInput(&doc.Channels[i], nil)
			if err != nil {
				continue
			}
			if src, err := splitSource(*in.SourceURL); err == nil && src.keeps() {
				t.Fatalf("a masked source reached a new channel: %q", *in.SourceURL)
			}
		}
	})
}

func TestTransferChannelDefaults(t *testing.T) {
	var tc TransferChannel
	if err := json.Unmarshal([]byte(`{"name":"n","protocol":"rtsp","app":"a","stream":"s"}`), &tc); err != nil {
		t.Fatal(err)
	}
	if !tc.Enabled || !tc.HasAudio || tc.RTSPTransport != TransportAuto || tc.Vhost != DefaultVhost {
		t.Fatalf("defaults = %+v", tc.Config)
	}
	if err := json.Unmarshal([]byte(`{"enabled":false,"hasAudio":false}`), &tc); err != nil || tc.Enabled || tc.HasAudio {
		t.Fatalf("explicit false = %+v %v", tc.Config, err)
	}
}
