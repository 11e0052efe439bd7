// Command svc is the one binary of the platform; its first argument picks
// the role.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/svcplatform/svc/agent"
	"github.com/svcplatform/svc/cmd/svc/devstack"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/mediaengine"
	"github.com/svcplatform/svc/shared/buildinfo"
)

const usage = `usage: svc <command> [flags]

commands:
  server          run a control node (svc server -h lists the flags)
  dev             run a single-node platform for development, data in ./.svc-dev
  agent           the node agent of a media host: enroll, run, install (svc agent -h)
  engine          run the media engine (started by the agent; svc engine -h)
  remove-member   remove a control node from the cluster (svc remove-member -h)
  rejoin          recover a stopped control node whose store data is unreadable: remove it, move its data aside, join again (svc rejoin -h)
  version         print the version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = server.RunServer(os.Args[2:], os.Stdout, os.Stderr)
	case "dev":
		err = server.RunDev(os.Args[2:], os.Stdout, os.Stderr, devstack.LocalAgent)
	case "agent":
		err = agent.Main(os.Args[2:], os.Stdout, os.Stderr)
		var ee *agent.ExitError
		if errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "svc agent:", ee.Err)
			os.Exit(ee.Code)
		}
		if errors.Is(err, agent.ErrHelp) {
			os.Exit(0)
		}
	case "engine":
		err = mediaengine.Run(os.Args[2:], os.Stdout, os.Stderr)
		if errors.Is(err, mediaengine.ErrHelp) {
			os.Exit(0)
		}
	case "remove-member":
		err = server.RunRemoveMember(os.Args[2:], os.Stdout, os.Stderr)
	case "rejoin":
		err = server.RunRejoin(os.Args[2:], os.Stdout, os.Stderr)
	case "version", "--version":
		fmt.Printf("svc %s (commit %s, built %s, %s, contract %s)\n", buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate, buildinfo.GoVersion(), buildinfo.ContractVersion)
	default:
		fmt.Fprintf(os.Stderr, "svc: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, config.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
		os.Exit(1)
	}
}
