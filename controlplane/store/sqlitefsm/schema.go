package sqlitefsm

import "database/sql"

// SchemaVersion is the version of the base tables below. Raise it, and add a
// migration to migrations, whenever a base table changes.
const SchemaVersion = 2

// migration is one append-only schema step: its DDL, then run (if any), in
// one transaction. A step depends only on the database's content, so every
// replica migrates to the same state.
type migration struct {
	version int
	name    string
	ddl     []string
	run     func(tx *sql.Tx) error
}

var migrations = []migration{
	{1, "base tables: meta, kv, history, revision hashes, index specs", []string{
		`CREATE TABLE IF NOT EXISTS meta (
			name  TEXT PRIMARY KEY,
			num   INTEGER NOT NULL DEFAULT 0,
			text  TEXT NOT NULL DEFAULT ''
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS kv (
			key             TEXT PRIMARY KEY,
			value           BLOB NOT NULL,
			create_revision INTEGER NOT NULL,
			mod_revision    INTEGER NOT NULL,
			version         INTEGER NOT NULL
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS history (
			revision        INTEGER NOT NULL,
			seq             INTEGER NOT NULL,
			type            INTEGER NOT NULL,
			key             TEXT NOT NULL,
			value           BLOB,
			create_revision INTEGER NOT NULL,
			version         INTEGER NOT NULL,
			prev_value      BLOB,
			prev_create     INTEGER NOT NULL DEFAULT 0,
			prev_mod        INTEGER NOT NULL DEFAULT 0,
			prev_version    INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (revision, seq)
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS revision_hashes (
			revision  INTEGER PRIMARY KEY,
			log_index INTEGER NOT NULL,
			hash      TEXT NOT NULL
		)`,
		`CREATE TABLE IF NOT EXISTS index_specs (
			name        TEXT PRIMARY KEY,
			fingerprint TEXT NOT NULL
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY,
			name    TEXT NOT NULL
		)`,
	}, nil},
	{2, "one revisions row per Txn (hash and encoded changes) instead of history and revision_hashes", []string{
		`CREATE TABLE revisions (
			revision  INTEGER PRIMARY KEY,
			log_index INTEGER NOT NULL,
			hash      BLOB NOT NULL,
			changes   BLOB
		)`,
	}, migrateHistoryToRevisions},
}

// Names of meta rows. The revision, the hash and the applied index of the
// latest write are those of the last revisions row; meta records the
// applied index only when it moves without a revision (a compaction, or
// raft taking a snapshot after entries that wrote nothing).
const (
	metaAppliedIndex    = "applied_index"
	metaCompactRevision = "compact_revision"
)
