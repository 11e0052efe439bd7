package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/shared/logging"
)

// unreadableHint turns a store that cannot be opened into the one line an
// operator needs: what is unreadable and the command that recovers it.
func unreadableHint(cfg config.Config, err error) error {
	if !errors.Is(err, raftnode.ErrUnreadableData) {
		return err
	}
	return fmt.Errorf("%w. This node cannot start on it. Recover it from the other members with "+
		"`svc rejoin --join <API URL of a live member>` plus this node's usual flags or --config "+
		"(data dir %s, node id %s): it removes this member from the cluster, moves the unreadable data aside "+
		"inside the data directory, keeps the cluster key and joins again. A single-node cluster has no other "+
		"copy: restore its data directory from a backup instead", err, cfg.DataDir, cfg.NodeID)
}

// rejoinTimeout bounds the whole recovery, catching up included.
const rejoinTimeout = 10 * time.Minute

// RunRejoin is `svc rejoin`: the recovery of a control node whose store
// data cannot be used (unreadable, or lost). With the node stopped, it asks
// the cluster through a live member (--join) to remove this node's old
// membership, moves the node's raft log, snapshots and state database aside
// (the cluster key file and everything else stay), then starts the node,
// which joins as a new member and receives the state from the leader, and
// stops it once it has caught up. The node is then started as usual.
func RunRejoin(args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, os.LookupEnv, config.Defaults(), stderr)
	if err != nil {
		return err
	}
	if cfg.Join == "" {
		return errors.New("rejoin needs --join <API URL of a live member of the cluster>")
	}
	log, err := logging.New(cfg.LogLevel, cfg.NodeID)
	if err != nil {
		return err
	}
	defer log.Sync()
	keys, err := keyring.LoadOrCreate(cfg.KeyFile(), false)
	if err != nil {
		return fmt.Errorf("%w (rejoin keeps this node's cluster key file; give it with --cluster-key-file if it is not in the data directory)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rejoinTimeout)
	defer cancel()
	release, err := raftnode.LockDataDir(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("%w: stop this node before rejoining", err)
	}
	if _, err := callInternal(ctx, keys, cfg.Join, httpapi.RemovePath, map[string]string{"nodeId": cfg.NodeID}); err != nil {
		release()
		return fmt.Errorf("removing the old membership of %s through %s: %w (nothing was changed on this node)", cfg.NodeID, cfg.Join, err)
	}
	fmt.Fprintf(stdout, "removed the old membership of %s\n", cfg.NodeID)
	aside, err := raftnode.MoveAside(cfg.DataDir, time.Now())
	release()
	if err != nil {
		return fmt.Errorf("moving the store data aside to %s: %w", aside, err)
	}
	fmt.Fprintf(stdout, "moved the old store data to %s (remove it once the node runs again)\n", aside)
	s, err := Start(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("starting %s as a new member: %w", cfg.NodeID, err)
	}
	err = s.Node.LinearizableBarrier(ctx)
	rev := s.Node.Revision()
	if serr := s.Shutdown(); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("%s joined but did not catch up: %w (start it as usual; it keeps catching up)", cfg.NodeID, err)
	}
	log.Info("rejoined the cluster", zap.String("via", cfg.Join), zap.Int64("revision", rev), zap.String("oldData", aside))
	fmt.Fprintf(stdout, "%s rejoined through %s and holds the cluster's state up to revision %d; start it as usual (svc server with its flags)\n",
		cfg.NodeID, cfg.Join, rev)
	return nil
}
