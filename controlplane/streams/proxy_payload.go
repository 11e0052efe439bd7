package streams

import (
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/shared/engineapi"
)

// proxyAddRequest is the engine.proxy.add payload that starts pulling a
// channel from src, its source URL with credentials. The credentials do
// not stay in the stored node command: the command queue seals the URL's
// credentials for the target node and leaves the payload without them
// (nodecommand.CreateRequest), and the agent fetches them over its mTLS
// port when it runs the command. Basic authentication over plain rtsp://
// is answered only when the channel opted in.
func proxyAddRequest(ch *channels.Channel, src string) engineapi.AddProxyRequest {
	return engineapi.AddProxyRequest{ID: string(ch.ChannelID), URL: src, Vhost: ch.Vhost, App: ch.App, Stream: ch.Stream,
		Transport: string(ch.RTSPTransport), AllowBasicAuth: ch.AllowBasicAuthOverPlainRTSP,
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(time.Second), MaxBackoff: engineapi.Duration(30 * time.Second)}}
}
