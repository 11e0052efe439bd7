// Package buildinfo carries the version stamped into the svc binary at build
// time (make sets these with -ldflags -X) and the contract version it serves.
package buildinfo

import "runtime"

// Set by the linker; the defaults describe an unstamped developer build.
var (
	Version   = "0.1.0-dev"
	Commit    = "unknown"
	BuildDate = "unknown"
)

// ContractVersion is the version of api/openapi.yaml this binary implements.
const ContractVersion = "1.0.0.169"

// GoVersion is the toolchain the binary was built with.
func GoVersion() string { return runtime.Version() }
