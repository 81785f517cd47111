//! The encrypted store as a user relies on it: private on disk, refusing the wrong key
//! without touching the file, migrating forward, searching vectors and text.

mod common;

use common::*;
use hearth_core::store::{self, Store, migrations};
use hearth_core::{Error, Hearth, KeyBackend};
use rusqlite::params;

/// Stores `marker` in a setting, a job payload, an FTS5 index and a vec0 table.
fn store_marker_everywhere(store: &Store, marker: &str) {
    let m = marker.to_owned();
    store
        .write_blocking(move |c| {
            c.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES ('profile.note', json_quote(?1), 0)",
                [&m],
            )?;
            c.execute_batch(
                "CREATE VIRTUAL TABLE notes_fts USING fts5(body);
                 CREATE VIRTUAL TABLE notes_vec USING vec0(embedding float[4]);",
            )?;
            c.execute("INSERT INTO notes_fts (body) VALUES (?1)", [&m])?;
            c.execute(
                "INSERT INTO notes_vec (rowid, embedding) VALUES (1, '[0.1, 0.2, 0.3, 0.4]')",
                [],
            )?;
            Ok(())
        })
        .expect("write marker");
    store
        .jobs()
        .enqueue("test", &serde_json::json!({ "text": marker }))
        .expect("enqueue");
}

fn assert_private_on_disk(backend: KeyBackend) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), backend);
    let marker = marker(backend.as_str());
    {
        let hearth = Hearth::open(&opts).expect("open");
        store_marker_everywhere(hearth.store(), &marker);
        // Read it back so we know it really was stored.
        let found: String = hearth
            .store()
            .read_blocking(|c| {
                c.query_row(
                    "SELECT body FROM notes_fts WHERE notes_fts MATCH 'HEARTH'",
                    [],
                    |r| r.get(0),
                )
            })
            .expect("read back");
        assert_eq!(found, marker);
    }
    let data = opts.data_dir.root();
    assert!(
        files_containing(data, marker.as_bytes()).is_empty(),
        "plaintext marker found on disk"
    );
    assert!(!store::file_header_is_plaintext(&opts.data_dir.db_path()).expect("header"));
    // And it comes back when reopened.
    let store = Store::open(&opts).expect("reopen");
    let value: String = store
        .read_blocking(|c| {
            c.query_row("SELECT json_extract(value, '$') FROM settings", [], |r| {
                r.get(0)
            })
        })
        .expect("read setting");
    assert_eq!(value, marker);
}

#[test]
fn nothing_stored_is_readable_on_disk_with_the_file_backend() {
    assert_private_on_disk(KeyBackend::File);
}

#[test]
fn nothing_stored_is_readable_on_disk_with_the_passphrase_backend() {
    assert_private_on_disk(KeyBackend::Passphrase);
}

#[test]
fn nothing_stored_is_readable_on_disk_with_the_keyring_backend() {
    require_keyring();
    assert_private_on_disk(KeyBackend::Keyring);
}

#[test]
fn a_wrong_key_is_refused_and_the_files_are_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::File);
    drop(Store::open(&opts).expect("create"));
    // Swap in another database's key file: a valid key, just not this database's.
    let other = tempfile::tempdir().expect("tempdir");
    let other_opts = options(other.path(), KeyBackend::File);
    drop(Store::open(&other_opts).expect("create other"));
    std::fs::copy(
        other_opts.data_dir.key_file_path(),
        opts.data_dir.key_file_path(),
    )
    .expect("copy key");

    let before = fingerprint(opts.data_dir.root());
    let err = Store::open(&opts).err().expect("must refuse");
    assert!(matches!(err, Error::WrongKey { .. }), "{err:?}");
    assert!(!err.to_string().contains("file is not a database"), "{err}");
    assert_eq!(before, fingerprint(opts.data_dir.root()));
}

#[test]
fn a_missing_key_is_refused_and_the_files_are_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::File);
    drop(Store::open(&opts).expect("create"));
    std::fs::remove_file(opts.data_dir.key_file_path()).expect("remove key");
    let before = fingerprint(opts.data_dir.root());
    let err = Store::open(&opts).err().expect("must refuse");
    assert_eq!(err.code(), "key_missing", "{err}");
    assert_eq!(before, fingerprint(opts.data_dir.root()));
    assert!(
        !opts.data_dir.key_file_path().exists(),
        "no new key may be made"
    );
}

#[test]
fn a_wrong_passphrase_is_refused_and_the_files_are_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut opts = options(tmp.path(), KeyBackend::Passphrase);
    drop(Store::open(&opts).expect("create"));
    let before = fingerprint(opts.data_dir.root());
    opts.passphrase = Some(hearth_core::Passphrase::new("not it").expect("p"));
    let err = Store::open(&opts).err().expect("must refuse");
    assert_eq!(err.code(), "wrong_passphrase");
    opts.passphrase = None;
    let err = Store::open(&opts).err().expect("must refuse");
    assert_eq!(err.code(), "passphrase_required");
    assert_eq!(before, fingerprint(opts.data_dir.root()));
}

#[test]
fn a_schema_newer_than_the_binary_is_refused_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::File);
    let store = Store::open(&opts).expect("create");
    store
        .write_blocking(|c| {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            c.pragma_update(None, "user_version", migrations::LATEST + 7)
        })
        .expect("bump version");
    drop(store);
    let db = opts.data_dir.db_path();
    let before = std::fs::read(&db).expect("read db");
    let err = Store::open(&opts).err().expect("must refuse");
    match err {
        Error::SchemaTooNew { found, supported } => {
            assert_eq!(found, migrations::LATEST + 7);
            assert_eq!(supported, migrations::LATEST);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    assert_eq!(before, std::fs::read(&db).expect("read db"));
}

#[test]
fn migrations_apply_from_empty_and_from_every_older_version() {
    for start in 0..=migrations::LATEST {
        let mut conn = rusqlite::Connection::open_in_memory().expect("memory db");
        migrations::migrate_to(&mut conn, start).expect("migrate to start");
        assert_eq!(migrations::schema_version(&conn).expect("version"), start);
        // Data written at the older version must survive the upgrade.
        if start >= 1 {
            conn.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES ('k', '\"v\"', 1)",
                [],
            )
            .expect("seed settings");
        }
        if start >= 2 {
            conn.execute(
                "INSERT INTO jobs (kind, payload, run_after, created_at, updated_at) VALUES ('k', '{}', 0, 0, 0)",
                [],
            )
            .expect("seed jobs");
        }
        let applied = migrations::migrate_to(&mut conn, migrations::LATEST).expect("migrate");
        assert_eq!(
            applied,
            ((start + 1)..=migrations::LATEST).collect::<Vec<_>>()
        );
        assert_eq!(
            migrations::schema_version(&conn).expect("version"),
            migrations::LATEST
        );
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("check");
        assert_eq!(ok, "ok");
        if start >= 1 {
            let v: String = conn
                .query_row("SELECT value FROM settings WHERE key = 'k'", [], |r| {
                    r.get(0)
                })
                .expect("settings survived");
            assert_eq!(v, "\"v\"");
        }
        // Running again is a no-op.
        assert!(
            migrations::migrate_to(&mut conn, migrations::LATEST)
                .expect("again")
                .is_empty()
        );
    }
}

#[test]
fn vec0_knn_returns_the_known_nearest_neighbours() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&options(tmp.path(), KeyBackend::File)).expect("open");
    let ids: Vec<i64> = store
        .write_blocking(|c| {
            c.execute_batch("CREATE VIRTUAL TABLE v USING vec0(embedding float[3])")?;
            // Points on a line: distance to the query [10,0,0] orders them 10, 9, 11, 8, 12 …
            for i in 0..50i64 {
                let v = format!("[{}, 0, 0]", i as f64);
                c.execute("INSERT INTO v (rowid, embedding) VALUES (?1, ?2)", params![i, v])?;
            }
            let mut stmt = c.prepare(
                "SELECT rowid FROM v WHERE embedding MATCH '[10.2, 0, 0]' ORDER BY distance LIMIT 5",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })
        .expect("knn");
    assert_eq!(ids, vec![10, 11, 9, 12, 8]);
}

#[test]
fn fts5_bm25_ranks_the_most_relevant_text_first() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&options(tmp.path(), KeyBackend::File)).expect("open");
    let ranked: Vec<String> = store
        .write_blocking(|c| {
            c.execute_batch(
                "CREATE VIRTUAL TABLE t USING fts5(title, body);
                 INSERT INTO t VALUES ('groceries', 'milk eggs bread');
                 INSERT INTO t VALUES ('trip', 'lisbon lisbon lisbon flights and hotels');
                 INSERT INTO t VALUES ('notes', 'moved from chicago to lisbon last spring');",
            )?;
            let mut stmt =
                c.prepare("SELECT title FROM t WHERE t MATCH 'lisbon' ORDER BY bm25(t)")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })
        .expect("search");
    assert_eq!(ranked, vec!["trip".to_owned(), "notes".to_owned()]);
}

#[test]
fn two_data_dirs_side_by_side_keep_their_own_keys() {
    require_keyring();
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    let oa = options(a.path(), KeyBackend::Keyring);
    let ob = options(b.path(), KeyBackend::Keyring);
    let sa = Store::open(&oa).expect("a");
    let sb = Store::open(&ob).expect("b");
    assert_ne!(sa.db_id(), sb.db_id());
    drop((sa, sb));
    // Both reopen with their own keys, in either order.
    Store::open(&ob).expect("b again");
    Store::open(&oa).expect("a again");
}

#[test]
fn a_key_missing_from_the_keyring_is_refused_untouched() {
    require_keyring();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::Keyring);
    let id = Store::open(&opts).expect("create").db_id().to_owned();
    keyring::Entry::new("hearth", &format!("db-{id}"))
        .expect("entry")
        .delete_credential()
        .expect("delete from keyring");
    let before = fingerprint(opts.data_dir.root());
    let err = Store::open(&opts).err().expect("must refuse");
    assert_eq!(err.code(), "key_missing", "{err}");
    assert!(err.to_string().contains("keyring"), "{err}");
    assert_eq!(before, fingerprint(opts.data_dir.root()));
    // Nothing new was put in the keyring either.
    assert!(matches!(
        keyring::Entry::new("hearth", &format!("db-{id}"))
            .expect("entry")
            .get_password(),
        Err(keyring::Error::NoEntry)
    ));
}

#[test]
fn the_key_really_lives_in_the_keyring() {
    require_keyring();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::Keyring);
    let store = Store::open(&opts).expect("create");
    let stored = keyring::Entry::new("hearth", &format!("db-{}", store.db_id()))
        .expect("entry")
        .get_password()
        .expect("key is in the keyring");
    assert_eq!(stored.len(), 64);
    assert!(!opts.data_dir.key_file_path().exists());
    let recovery = store::export_recovery_key(&opts).expect("export");
    assert_eq!(recovery.expose().replace('-', ""), stored);
}
