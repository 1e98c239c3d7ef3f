//! The journal index's tables, PostgreSQL's alone (SQLite keeps none), as its migrations create
//! them (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// PostgreSQL's migration 4: one row per entry of every replica's journal chain, the line as
/// written, for activity-log queries and verification across replicas.
pub(crate) const ENTRIES: Sql<'static> = Sql::postgres_only(
    r#"
    CREATE TABLE journal_entries (
        replica   TEXT COLLATE "C" NOT NULL,
        seq       BIGINT NOT NULL,
        timestamp TEXT COLLATE "C" NOT NULL,           -- ISO 8601 UTC, fixed width: orders as text
        team_id   TEXT COLLATE "C" NOT NULL,
        line      TEXT NOT NULL,
        PRIMARY KEY (replica, seq)
    );
    CREATE INDEX journal_entries_by_time ON journal_entries(timestamp, replica, seq);
    CREATE INDEX journal_entries_by_team ON journal_entries(team_id, timestamp, replica, seq);
    "#,
);

/// PostgreSQL's migration 5: each replica's latest signed tree head of its transparency log, so
/// any replica can prove any replica's entries (docs/JOURNAL.md, "Replicas").
pub(crate) const TLOG_HEADS: Sql<'static> = Sql::postgres_only(
    r#"
    CREATE TABLE journal_tlog_heads (
        replica TEXT COLLATE "C" PRIMARY KEY,
        size    BIGINT NOT NULL,
        vkey    TEXT NOT NULL,                         -- the note verifier key of its signer
        note    TEXT NOT NULL
    );
    "#,
);
