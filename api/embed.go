// Package api holds the public contract, api/openapi.yaml, embedded so the
// server can publish the exact document it enforces.
package api

import _ "embed"

// OpenAPIYAML is the contract as written.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
