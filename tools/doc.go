// Package tools pins the development tools the Makefile runs (golangci-lint)
// in a module of their own, so their dependencies stay out of the main
// module's go.mod: `go tool -modfile=tools/go.mod golangci-lint` builds and
// runs the pinned version.
package tools
