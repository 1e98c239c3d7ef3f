//! Each back end's own schema checks, outside the trait: SQLite from an empty or a foreign file;
//! PostgreSQL from an empty database, with two replicas migrating it at once, refusing a newer
//! schema, and failing clearly when the server is not there.

use std::sync::Arc;

use sovereign::store::StoreError;
use sovereign::store::postgres::PgStore;
use sovereign::store::sqlite::SqliteStore;
use sovereign::store::traits::*;

use super::clock;
use crate::services::Postgres;

#[tokio::test]
async fn an_empty_file_is_migrated_and_a_foreign_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::File::create(&path).unwrap();
    let s = SqliteStore::open(&path, clock()).await.unwrap();
    assert_eq!(
        s.schema_version().await.unwrap(),
        SqliteStore::latest_schema_version()
    );
    assert!(s.teams().await.unwrap().is_empty());
    drop(s);

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    assert!(SqliteStore::open(&junk, clock()).await.is_err());
}

/// A plain connection to `url`, beside the store, to look at and tamper with the schema.
async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// Issue 17: replicas starting at once against an empty database both come up; the schema is
/// applied once (the second waits on the advisory lock, then finds it done).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_two_replicas_migrate_an_empty_database_once() {
    let Some(pg) = Postgres::get() else { return };
    let url = pg.fresh_database().await;
    let (a, b) = tokio::join!(
        PgStore::connect(&url, 2, clock()),
        PgStore::connect(&url, 2, clock())
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let latest = PgStore::latest_schema_version();
    assert_eq!(a.schema_version().await.unwrap(), latest);
    assert_eq!(b.schema_version().await.unwrap(), latest);
    let rows: i64 = connect(&url)
        .await
        .query_one("SELECT COUNT(*) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, latest, "each migration applied once");
    assert!(a.teams().await.unwrap().is_empty());

    // Connecting again is a no-op.
    let c = PgStore::connect(&url, 1, clock()).await.unwrap();
    assert_eq!(c.schema_version().await.unwrap(), latest);
}

#[tokio::test]
async fn postgres_a_newer_schema_is_refused() {
    let Some(pg) = Postgres::get() else { return };
    let url = pg.fresh_database().await;
    PgStore::connect(&url, 1, clock()).await.unwrap();
    connect(&url)
        .await
        .execute(
            "INSERT INTO schema_version (version, applied_at) VALUES ($1, 0)",
            &[&(PgStore::latest_schema_version() + 1)],
        )
        .await
        .unwrap();
    let err = PgStore::connect(&url, 1, clock()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found, known }
            if found == known + 1 && known == PgStore::latest_schema_version()),
        "{err}"
    );
}

/// No server, or not a connection string: an error that says PostgreSQL, never a hang.
#[tokio::test]
async fn postgres_unreachable_or_malformed_is_a_clear_error() {
    let clock = Arc::new(sovereign::store::ManualClock::new(0));
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    let err = PgStore::connect("postgres://postgres@127.0.0.1:1/none", 1, clock.clone())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Pool(_)), "{err:?}");
    assert!(err.to_string().contains("postgres"), "{err}");

    let err = PgStore::connect("postgres://[not a url", 1, clock)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Invalid { field: "url", .. }),
        "{err:?}"
    );
}

/// A fresh database's schema as the catalogue reports it, one line per object, sorted: SQLite's
/// `sqlite_master` (each object's `CREATE` text as executed).
fn sqlite_schema(path: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut st = conn
        .prepare(
            "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master
             WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok(format!(
                "{} {} on {}:\n{}\n",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?
            ))
        })
        .unwrap();
    rows.collect::<Result<Vec<_>, _>>().unwrap().concat()
}

/// PostgreSQL's view of the same: every column (type, nullability, default, collation,
/// identity), every index and every constraint of the public schema, sorted.
async fn postgres_schema(url: &str) -> String {
    let c = connect(url).await;
    let mut out = String::new();
    for r in c
        .query(
            "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text,
                    COALESCE(column_default, ''), COALESCE(collation_name::text, ''),
                    is_identity::text, COALESCE(identity_generation::text, '')
             FROM information_schema.columns WHERE table_schema = 'public'
             ORDER BY table_name, ordinal_position",
            &[],
        )
        .await
        .unwrap()
    {
        let f: Vec<String> = (0..8).map(|i| r.get(i)).collect();
        out += &format!("column {}\n", f.join(" | "));
    }
    for r in c
        .query(
            "SELECT indexname::text, indexdef FROM pg_indexes WHERE schemaname = 'public'
             ORDER BY indexname",
            &[],
        )
        .await
        .unwrap()
    {
        out += &format!(
            "index {}: {}\n",
            r.get::<_, String>(0),
            r.get::<_, String>(1)
        );
    }
    for r in c
        .query(
            "SELECT cl.relname::text, co.conname::text, pg_get_constraintdef(co.oid)
             FROM pg_constraint co JOIN pg_class cl ON cl.oid = co.conrelid
             JOIN pg_namespace n ON n.oid = cl.relnamespace WHERE n.nspname = 'public'
             ORDER BY cl.relname, co.conname",
            &[],
        )
        .await
        .unwrap()
    {
        out += &format!(
            "constraint {}.{}: {}\n",
            r.get::<_, String>(0),
            r.get::<_, String>(1),
            r.get::<_, String>(2)
        );
    }
    out
}

/// Compares `actual` with the recorded schema in `schema/<name>`; `SOVEREIGN_BLESS_SCHEMA=1`
/// records it instead (only when a new migration changes the schema on purpose).
fn same_as_recorded(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/store/schema")
        .join(name);
    if std::env::var_os("SOVEREIGN_BLESS_SCHEMA").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (record it with SOVEREIGN_BLESS_SCHEMA=1)",
            path.display()
        )
    });
    assert!(
        recorded == actual,
        "the schema a fresh database gets is not the recorded {}:\n{actual}",
        path.display()
    );
}

/// Issue 47: the DDL moved into the resource folders; a fresh database's schema is what the
/// migrations made before, object by object, `CREATE` text and all.
#[tokio::test]
async fn sqlite_a_fresh_schema_is_the_recorded_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.db");
    let s = SqliteStore::open(&path, clock()).await.unwrap();
    drop(s);
    same_as_recorded("sqlite.txt", &sqlite_schema(&path));
}

/// The same for PostgreSQL.
#[tokio::test]
async fn postgres_a_fresh_schema_is_the_recorded_one() {
    let Some(pg) = Postgres::get() else { return };
    let url = pg.fresh_database().await;
    PgStore::connect(&url, 1, clock()).await.unwrap();
    same_as_recorded("postgres.txt", &postgres_schema(&url).await);
}
