//! Vectors computed elsewhere, for measuring an embedding model Hearth's encoder does not
//! run yet (`hearth eval memory --profile DIR --vectors FILE`): the profile evaluation
//! runs exactly as with a local model, but each text's vector is read from `FILE`, JSON
//! lines `{"t": text, "v": [numbers]}`. The texts it needs and does not find are listed
//! in `FILE.missing`, one per line, and the run fails saying so: compute those, add them,
//! run again. docs/decisions/0025-memory-at-scale.md measured all-mpnet-base-v2 this way.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hearth_base::{Error, Result};

/// The largest vectors file read (10,000 texts of 768 numbers take about 80 MB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The longest vector accepted.
pub const MAX_DIMENSIONS: usize = 8192;

/// An [`hearth_embed::Embedder`] answering from a file of vectors by text.
pub struct FileVectors {
    path: PathBuf,
    id: String,
    dims: usize,
    by_text: HashMap<String, Vec<f32>>,
    missing: Mutex<BTreeSet<String>>,
}

#[derive(serde::Deserialize)]
struct Line {
    t: String,
    v: Vec<f64>,
}

impl FileVectors {
    /// Reads `path`; every line must be `{"t": text, "v": [numbers]}` with vectors of one
    /// length, finite and not all zero (each is L2-normalised here).
    pub fn load(path: &Path) -> Result<Self> {
        let Some(text) = crate::read_bounded(path, MAX_FILE_BYTES)? else {
            return Err(Error::InvalidInput(format!(
                "{} is larger than {} MB",
                path.display(),
                MAX_FILE_BYTES >> 20
            )));
        };
        let name = path.display();
        let mut by_text = HashMap::new();
        let mut dims = None;
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| Error::InvalidInput(format!("{name} line {}: {why}", i + 1));
            let line: Line = serde_json::from_str(raw)
                .map_err(|_| bad("expected {\"t\": text, \"v\": [numbers]}"))?;
            let len = line.v.len();
            if len == 0 || len > MAX_DIMENSIONS {
                return Err(bad(&format!("a vector has 1 to {MAX_DIMENSIONS} numbers")));
            }
            if *dims.get_or_insert(len) != len {
                return Err(bad(&format!(
                    "{len} numbers where the lines before have {}",
                    dims.unwrap_or(len)
                )));
            }
            let norm = line.v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err(bad("a vector must be finite and not all zero"));
            }
            by_text.insert(
                line.t,
                line.v
                    .iter()
                    .map(|x| (x / norm) as f32)
                    .collect::<Vec<f32>>(),
            );
        }
        let Some(dims) = dims else {
            return Err(Error::InvalidInput(format!("{name} has no vectors")));
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(FileVectors {
            path: path.to_owned(),
            id: format!("vectors from {file_name}"),
            dims,
            by_text,
            missing: Mutex::new(BTreeSet::new()),
        })
    }

    /// After a run: an error naming how many texts had no vector and the file that now
    /// lists them (`<FILE>.missing`), or `Ok` when every text had one.
    pub fn check_complete(&self) -> Result<()> {
        let missing = self.missing.lock().unwrap_or_else(|e| e.into_inner());
        if missing.is_empty() {
            return Ok(());
        }
        let mut list = self.path.clone().into_os_string();
        list.push(".missing");
        let list = PathBuf::from(list);
        let body: String = missing
            .iter()
            .map(|t| format!("{}\n", t.replace(['\n', '\r'], " ")))
            .collect();
        std::fs::write(&list, body).map_err(|e| Error::io(&list, e))?;
        Err(Error::InvalidInput(format!(
            "{} texts have no vector in {}; they are listed in {}, one per line: add their vectors and run again",
            missing.len(),
            self.path.display(),
            list.display()
        )))
    }
}

impl hearth_embed::Embedder for FileVectors {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| match self.by_text.get(*t) {
                Some(v) => v.clone(),
                None => {
                    self.missing
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert((*t).to_owned());
                    // A placeholder: the run goes on to find every missing text, then fails.
                    let mut v = vec![0.0; self.dims];
                    v[0] = 1.0;
                    v
                }
            })
            .collect())
    }
}
