//! The model table: context windows and prices by model name (or name prefix). Built-in
//! defaults live in code ([`crate::context::BUILTIN_WINDOWS`], [`crate::pricing::TABLE`]);
//! the user's edits and what servers report (Ollama `/api/show`) live in the `model_info`
//! table and win over them. Precedence for a window: a provider's own setting, the user's
//! row, the server's report, the built-in table, then [`crate::context::DEFAULT_WINDOW`].

use std::collections::BTreeMap;

use rusqlite::params;
use serde::Serialize;

use crate::context::{self, model_key};
use crate::pricing::{self, Price};
use crate::store::Store;
use crate::time::now_millis;
use crate::types::Usage;
use crate::{Error, Result};

/// Where a model's window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// The provider's own setting (or HEARTH_CONTEXT_WINDOW).
    Configured,
    /// The user's row in the model table.
    User,
    /// What the server reported.
    Server,
    /// The built-in table.
    Table,
    /// Nobody knows: [`context::DEFAULT_WINDOW`].
    Unknown,
}

impl WindowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::User => "user",
            Self::Server => "server",
            Self::Table => "table",
            Self::Unknown => "unknown",
        }
    }
}

/// A row of the table as the user sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    pub model: String,
    pub context_window: Option<u32>,
    pub input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    pub cached_usd_per_mtok: Option<f64>,
    /// The user changed or added this row.
    pub edited: bool,
}

/// The user's values for a row; `None` means "use the default".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelEdit {
    pub model: String,
    pub context_window: Option<u32>,
    pub input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    pub cached_usd_per_mtok: Option<f64>,
}

#[derive(Debug, Clone, Default)]
struct Row {
    context_window: Option<u32>,
    input: Option<f64>,
    output: Option<f64>,
    cached: Option<f64>,
    server_window: Option<u32>,
}

impl Row {
    fn edited(&self) -> bool {
        self.context_window.is_some()
            || self.input.is_some()
            || self.output.is_some()
            || self.cached.is_some()
    }
}

/// A snapshot of the table for lookups (load once per turn).
#[derive(Debug, Clone, Default)]
pub struct ModelTable {
    rows: BTreeMap<String, Row>,
}

/// The longest key of `rows` that `model` starts with, among rows passing `keep`.
fn longest_prefix<'a>(
    rows: &'a BTreeMap<String, Row>,
    model: &str,
    keep: impl Fn(&Row) -> bool,
) -> Option<&'a Row> {
    rows.iter()
        .filter(|(k, r)| model.starts_with(k.as_str()) && keep(r))
        .max_by_key(|(k, _)| k.len())
        .map(|(_, r)| r)
}

impl ModelTable {
    /// The window a chat with `model` is assembled for: its provider's setting, else this
    /// table. (The one place a window is decided.)
    pub fn window_for(&self, model: &crate::llm::ChatModel) -> u32 {
        model
            .context_window
            .unwrap_or_else(|| self.window(&model.model).0)
    }

    /// The window of `model` and where it came from (without a provider setting).
    pub fn window(&self, model: &str) -> (u32, WindowSource) {
        let m = model_key(model);
        if let Some(w) = longest_prefix(&self.rows, &m, |r| r.context_window.is_some())
            .and_then(|r| r.context_window)
        {
            return (w, WindowSource::User);
        }
        if let Some(w) = self.rows.get(&m).and_then(|r| r.server_window) {
            return (w, WindowSource::Server);
        }
        match context::builtin_window(model) {
            Some(w) => (w, WindowSource::Table),
            None => (context::DEFAULT_WINDOW, WindowSource::Unknown),
        }
    }

    /// The price of `model`: the user's row (whole), else the built-in table.
    pub fn price(&self, model: &str) -> Option<Price> {
        let m = model_key(model);
        let user = longest_prefix(&self.rows, &m, |r| r.input.is_some() || r.output.is_some());
        if let Some(r) = user {
            let input = r.input.unwrap_or(0.0);
            return Some(Price {
                input,
                output: r.output.unwrap_or(0.0),
                cached_input: r.cached.unwrap_or(input),
                cache_write: input,
            });
        }
        pricing::price(model)
    }

    /// The user has set a price for `model`.
    fn user_priced(&self, model: &str) -> bool {
        let m = model_key(model);
        longest_prefix(&self.rows, &m, |r| r.input.is_some() || r.output.is_some()).is_some()
    }

    /// What a call cost: a user price always applies; otherwise local servers are free and
    /// hosted models without a known price are `None`.
    pub fn cost(&self, base_url: &str, model: &str, usage: Usage) -> Option<f64> {
        if !self.user_priced(model) && pricing::is_local(base_url) {
            return Some(0.0);
        }
        self.price(model).map(|p| pricing::cost(p, usage))
    }
}

/// The model table over one store.
#[derive(Clone)]
pub struct Models {
    store: Store,
}

fn check_price(name: &str, v: Option<f64>) -> Result<()> {
    match v {
        Some(p) if !p.is_finite() || !(0.0..=10_000.0).contains(&p) => Err(Error::InvalidInput(
            format!("the {name} price must be between 0 and 10000 USD per million tokens"),
        )),
        _ => Ok(()),
    }
}

impl Models {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// A snapshot for lookups.
    pub fn table(&self) -> Result<ModelTable> {
        let rows = self.store.read_blocking(|c| {
            let mut stmt = c.prepare(
                "SELECT model, context_window, input_usd_per_mtok, output_usd_per_mtok,
                        cached_usd_per_mtok, server_context_window FROM model_info",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Row {
                        context_window: r.get(1)?,
                        input: r.get(2)?,
                        output: r.get(3)?,
                        cached: r.get(4)?,
                        server_window: r.get(5)?,
                    },
                ))
            })?;
            rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
        })?;
        Ok(ModelTable { rows })
    }

    /// Every row: the built-in ones with the user's edits applied, then the user's own and
    /// server-reported models, sorted by name.
    pub fn list(&self) -> Result<Vec<ModelInfo>> {
        let table = self.table()?;
        let mut out: BTreeMap<String, ModelInfo> = BTreeMap::new();
        for (prefix, window) in context::BUILTIN_WINDOWS {
            out.insert(
                (*prefix).to_owned(),
                ModelInfo {
                    model: (*prefix).to_owned(),
                    context_window: Some(*window),
                    input_usd_per_mtok: None,
                    output_usd_per_mtok: None,
                    cached_usd_per_mtok: None,
                    edited: false,
                },
            );
        }
        for (prefix, price) in pricing::TABLE {
            let e = out
                .entry((*prefix).to_owned())
                .or_insert_with(|| ModelInfo {
                    model: (*prefix).to_owned(),
                    context_window: context::builtin_window(prefix),
                    input_usd_per_mtok: None,
                    output_usd_per_mtok: None,
                    cached_usd_per_mtok: None,
                    edited: false,
                });
            e.input_usd_per_mtok = Some(price.input);
            e.output_usd_per_mtok = Some(price.output);
            e.cached_usd_per_mtok = Some(price.cached_input);
        }
        for (model, row) in &table.rows {
            let e = out.entry(model.clone()).or_insert_with(|| ModelInfo {
                model: model.clone(),
                context_window: None,
                input_usd_per_mtok: None,
                output_usd_per_mtok: None,
                cached_usd_per_mtok: None,
                edited: false,
            });
            if let Some(w) = row.context_window.or(row.server_window) {
                e.context_window = Some(w);
            }
            if row.input.is_some() || row.output.is_some() {
                e.input_usd_per_mtok = row.input;
                e.output_usd_per_mtok = row.output;
                e.cached_usd_per_mtok = row.cached;
            }
            e.edited = row.edited();
        }
        Ok(out.into_values().collect())
    }

    /// Sets the user's values for a model (or prefix); `None` fields fall back to defaults.
    pub fn set(&self, edit: ModelEdit) -> Result<()> {
        let model = model_key(edit.model.trim());
        if model.is_empty() || model.len() > 200 {
            return Err(Error::InvalidInput(
                "a model name is 1 to 200 characters".into(),
            ));
        }
        if let Some(w) = edit.context_window
            && !(512..=100_000_000).contains(&w)
        {
            return Err(Error::InvalidInput(format!(
                "a context window of {w} tokens is not believable: use 512 or more"
            )));
        }
        check_price("input", edit.input_usd_per_mtok)?;
        check_price("output", edit.output_usd_per_mtok)?;
        check_price("cached input", edit.cached_usd_per_mtok)?;
        self.store.write_blocking(move |c| {
            c.execute(
                "INSERT INTO model_info (model, context_window, input_usd_per_mtok, output_usd_per_mtok,
                                         cached_usd_per_mtok, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (model) DO UPDATE SET context_window = excluded.context_window,
                   input_usd_per_mtok = excluded.input_usd_per_mtok,
                   output_usd_per_mtok = excluded.output_usd_per_mtok,
                   cached_usd_per_mtok = excluded.cached_usd_per_mtok,
                   updated_at = excluded.updated_at",
                params![
                    model,
                    edit.context_window,
                    edit.input_usd_per_mtok,
                    edit.output_usd_per_mtok,
                    edit.cached_usd_per_mtok,
                    now_millis()
                ],
            )?;
            Ok(())
        })
    }

    /// Drops the user's values for a model; true if there were any.
    pub fn reset(&self, model: &str) -> Result<bool> {
        let model = model_key(model.trim());
        self.store.write_blocking(move |c| {
            let n = c.execute(
                "UPDATE model_info SET context_window = NULL, input_usd_per_mtok = NULL,
                   output_usd_per_mtok = NULL, cached_usd_per_mtok = NULL, updated_at = ?2
                 WHERE model = ?1 AND (context_window IS NOT NULL OR input_usd_per_mtok IS NOT NULL
                   OR output_usd_per_mtok IS NOT NULL OR cached_usd_per_mtok IS NOT NULL)",
                params![model, now_millis()],
            )?;
            c.execute(
                "DELETE FROM model_info WHERE model = ?1 AND server_context_window IS NULL
                   AND context_window IS NULL AND input_usd_per_mtok IS NULL
                   AND output_usd_per_mtok IS NULL AND cached_usd_per_mtok IS NULL",
                [&model],
            )?;
            Ok(n > 0)
        })
    }

    /// Remembers the windows a server reported for its models.
    pub fn record_server_windows(&self, windows: Vec<(String, u32)>) -> Result<()> {
        if windows.is_empty() {
            return Ok(());
        }
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            for (model, window) in &windows {
                tx.execute(
                    "INSERT INTO model_info (model, server_context_window, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (model) DO UPDATE SET server_context_window = excluded.server_context_window,
                       updated_at = excluded.updated_at",
                    params![model_key(model), window, now_millis()],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::OpenOptions;
    use crate::{DataDir, KeyBackend};

    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = OpenOptions::new(DataDir::new(tmp.path().join("d")));
        opts.new_key_backend = KeyBackend::File;
        let store = Store::open(&opts).expect("open");
        (tmp, store)
    }

    #[test]
    fn the_users_window_beats_the_servers_which_beats_the_table() {
        let (_tmp, store) = store();
        let models = Models::new(store);
        let t = models.table().expect("table");
        assert_eq!(t.window("gpt-4o-mini"), (128_000, WindowSource::Table));
        assert_eq!(t.window("my-model"), (8_192, WindowSource::Unknown));
        models
            .record_server_windows(vec![
                ("my-model".into(), 4_096),
                ("gpt-4o-mini".into(), 64_000),
            ])
            .expect("server");
        let t = models.table().expect("table");
        assert_eq!(t.window("my-model"), (4_096, WindowSource::Server));
        assert_eq!(t.window("gpt-4o-mini"), (64_000, WindowSource::Server));
        models
            .set(ModelEdit {
                model: "gpt-4o".into(),
                context_window: Some(32_000),
                ..ModelEdit::default()
            })
            .expect("set");
        let t = models.table().expect("table");
        assert_eq!(t.window("openai/gpt-4o-mini"), (32_000, WindowSource::User));
        assert!(models.reset("gpt-4o").expect("reset"));
        assert!(!models.reset("gpt-4o").expect("reset twice"));
        let t = models.table().expect("table");
        assert_eq!(t.window("gpt-4o-mini"), (64_000, WindowSource::Server));
        let list = models.list().expect("list");
        let row = list
            .iter()
            .find(|r| r.model == "my-model")
            .expect("server row listed");
        assert_eq!(row.context_window, Some(4_096));
        assert!(!row.edited);
    }

    #[test]
    fn a_users_price_applies_even_to_a_local_server() {
        let (_tmp, store) = store();
        let models = Models::new(store);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        let t = models.table().expect("table");
        assert_eq!(
            t.cost("http://127.0.0.1:11434/v1", "llama3.2", usage),
            Some(0.0)
        );
        assert_eq!(t.cost("https://example.com/v1", "llama3.2", usage), None);
        assert_eq!(
            t.cost("https://api.openai.com/v1", "gpt-4o-mini", usage),
            Some(0.75)
        );
        models
            .set(ModelEdit {
                model: "llama3.2".into(),
                input_usd_per_mtok: Some(1.0),
                output_usd_per_mtok: Some(2.0),
                ..ModelEdit::default()
            })
            .expect("set");
        let t = models.table().expect("table");
        assert_eq!(
            t.cost("http://127.0.0.1:11434/v1", "llama3.2:3b", usage),
            Some(3.0)
        );
        let row = models
            .list()
            .expect("list")
            .into_iter()
            .find(|r| r.model == "llama3.2")
            .expect("row");
        assert!(row.edited);
        assert_eq!(
            row.context_window,
            Some(131_072),
            "the built-in window stays"
        );
    }

    #[test]
    fn unbelievable_values_are_refused() {
        let (_tmp, store) = store();
        let models = Models::new(store);
        for edit in [
            ModelEdit {
                model: "".into(),
                ..ModelEdit::default()
            },
            ModelEdit {
                model: "m".into(),
                context_window: Some(10),
                ..ModelEdit::default()
            },
            ModelEdit {
                model: "m".into(),
                input_usd_per_mtok: Some(-1.0),
                ..ModelEdit::default()
            },
            ModelEdit {
                model: "m".into(),
                output_usd_per_mtok: Some(f64::NAN),
                ..ModelEdit::default()
            },
        ] {
            assert!(matches!(models.set(edit), Err(Error::InvalidInput(_))));
        }
        assert!(models.list().expect("list").iter().all(|r| !r.edited));
    }
}
