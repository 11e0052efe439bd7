// Command permgen writes console/src/api/permissions.ts from the contract
// (run by `go generate ./console`, which `make generate` does).
package main

import (
	"fmt"
	"os"

	"github.com/svcplatform/svc/console"
)

func main() {
	out, err := console.PermissionsTS()
	if err == nil {
		err = os.WriteFile(console.PermissionsFile, out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "permgen:", err)
		os.Exit(1)
	}
}
