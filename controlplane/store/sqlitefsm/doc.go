// Package sqlitefsm is the deterministic state machine behind the embedded
// store: it applies committed log entries (transactions and compactions) to
// one SQLite database, keeps the kv table, the watch history, the per-kind
// index tables and a hash chain over applied entries in the same SQLite
// transaction, and serves local reads and watches. It knows nothing of raft's
// networking; it never reads the clock or a random source, so every replica
// that applies the same entries holds the same bytes.
package sqlitefsm
