//! User settings: small JSON values by key, in the encrypted database.

use rusqlite::OptionalExtension;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Store;
use crate::time::now_millis;
use crate::{Error, Result};

impl Store {
    /// The setting `key`, if set and of the expected shape.
    pub fn setting<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let key_owned = key.to_owned();
        let raw: Option<String> = self.read_blocking(move |c| {
            c.query_row(
                "SELECT value FROM settings WHERE key = ?1",
                [key_owned],
                |r| r.get(0),
            )
            .optional()
        })?;
        match raw {
            None => Ok(None),
            Some(json) => match serde_json::from_str(&json) {
                Ok(v) => Ok(Some(v)),
                Err(e) => {
                    tracing::warn!(key, error = %e, "ignoring a setting of an unexpected shape");
                    Ok(None)
                }
            },
        }
    }

    /// Sets `key` to `value`.
    pub fn set_setting<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let json = serde_json::to_string(value).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let key = key.to_owned();
        self.write_blocking(move |c| {
            c.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                rusqlite::params![key, json, now_millis()],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{DataDir, KeyBackend};
    use crate::{OpenOptions, Store};

    #[test]
    fn settings_round_trip_and_survive_a_reopen() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
        opts.new_key_backend = KeyBackend::File;
        let store = Store::open(&opts).expect("open");
        assert_eq!(store.setting::<String>("shortcut").expect("get"), None);
        store.set_setting("shortcut", &"Alt+Space").expect("set");
        store
            .set_setting("shortcut", &"Ctrl+Alt+H")
            .expect("overwrite");
        drop(store);
        let store = Store::open(&opts).expect("reopen");
        assert_eq!(
            store.setting::<String>("shortcut").expect("get").as_deref(),
            Some("Ctrl+Alt+H")
        );
        // A value of another shape reads as unset rather than failing.
        assert_eq!(store.setting::<u32>("shortcut").expect("get"), None);
    }

    #[test]
    fn released_connections_leave_nothing_unreadable() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
        opts.new_key_backend = KeyBackend::File;
        let store = Store::open(&opts).expect("open");
        store.set_setting("theme", &"dark").expect("set");
        assert_eq!(store.inner.readers.lock().expect("pool").len(), 0);
        assert_eq!(
            store.setting::<String>("theme").expect("get").as_deref(),
            Some("dark")
        );
        assert_eq!(store.inner.readers.lock().expect("pool").len(), 1);
        // Idle: the pooled reader is closed; the next read opens one and sees the same.
        store.release_memory();
        assert_eq!(store.inner.readers.lock().expect("pool").len(), 0);
        assert_eq!(
            store.setting::<String>("theme").expect("get").as_deref(),
            Some("dark")
        );
        store
            .set_setting("theme", &"light")
            .expect("write after release");
        assert_eq!(
            store.setting::<String>("theme").expect("get").as_deref(),
            Some("light")
        );
    }
}
