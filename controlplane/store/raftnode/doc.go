// Package raftnode is the embedded backend of the control plane's store: a
// hashicorp/raft node with a raft-wal log, the sqlitefsm state machine, an
// authenticated internal link to the other control nodes, follower-to-leader
// forwarding with read-your-writes, linearizable reads, membership changes and
// a leadership handle for background workers. It implements store.Store.
package raftnode
