package agentapi

import "github.com/svcplatform/svc/shared/engineapi"

// Secrets of node commands never stay in a command's stored payload: a
// camera URL with credentials is replaced there by its masked form and
// "secretUrl": true, and the full URL is kept sealed beside the command
// for its node. The agent fetches it from PathCommandSecret while it runs
// the command (the agent port checks that the command is this node's and
// is in flight) and passes it to the engine over loopback; it never logs
// or journals it.
const PathCommandSecret = "/agent/v1/commands/secret"

// SecretURLTypes are the command types whose payload's top-level "url"
// may carry credentials; the control plane seals them on creation.
var SecretURLTypes = map[string]bool{TypeEngineProxyAdd: true, TypeEngineSmokeTestRTSP: true}

// CommandSecretRequest asks for the sealed secret of a command the agent
// is running (Attempt is the delivery it holds).
type CommandSecretRequest struct {
	CommandID string `json:"commandId"`
	Attempt   int    `json:"attempt"`
}

// CommandSecretResponse is the command's secret: the full URL.
type CommandSecretResponse struct {
	URL string `json:"url"`
}

// SecretURL is the mark a payload carries when its URL's credentials were
// sealed away: the agent takes the URL from PathCommandSecret instead.
type SecretURL struct {
	SecretURL bool `json:"secretUrl,omitempty"`
}

// ProxyAdd is the engine.proxy.add payload: the engine's request, and the
// mark that its URL is to be fetched.
type ProxyAdd struct {
	engineapi.AddProxyRequest
	SecretURL
}

// SmokeTest is the engine.smoke-test.rtsp payload.
type SmokeTest struct {
	engineapi.SmokeTestRequest
	SecretURL
}
