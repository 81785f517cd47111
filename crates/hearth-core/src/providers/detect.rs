//! Local model servers running on this computer now.

use std::time::Duration;

use serde::Serialize;

use super::{Preset, Providers, env};
use crate::llm::LlmClient;
use crate::{Error, Result};

/// A model server found running on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DetectedServer {
    pub preset: Preset,
    pub base_url: String,
    pub models: Vec<String>,
    /// The configured provider already pointing at it.
    pub configured_as: Option<String>,
}

/// Where local servers are looked for: HEARTH_LOCAL_SERVERS (`preset=url,…`, for unusual
/// ports and for tests) or the default ports of Ollama, LM Studio and llama.cpp.
pub fn local_candidates() -> Result<Vec<(Preset, String)>> {
    match env("HEARTH_LOCAL_SERVERS") {
        None => Ok([Preset::Ollama, Preset::LmStudio, Preset::LlamaCpp]
            .into_iter()
            .filter_map(|p| p.base_url().map(|u| (p, u.to_owned())))
            .collect()),
        Some(list) => list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|entry| match entry.split_once('=') {
                Some((p, u)) if u.starts_with("http://") || u.starts_with("https://") => {
                    Ok((Preset::parse(p)?, u.trim().trim_end_matches('/').to_owned()))
                }
                _ => Err(Error::InvalidInput(format!(
                    "HEARTH_LOCAL_SERVERS entry {entry:?} is not PRESET=URL"
                ))),
            })
            .collect(),
    }
}

/// How long detection waits for a local server to answer.
pub const DETECT_TIMEOUT: Duration = Duration::from_millis(1_500);

/// The local model servers running now, with their models, marking the ones already
/// configured.
pub async fn detect_local(
    client: &LlmClient,
    providers: &Providers,
) -> Result<Vec<DetectedServer>> {
    let candidates = local_candidates()?;
    let urls: Vec<String> = candidates.iter().map(|(_, u)| u.clone()).collect();
    let found = client.probe(&urls, DETECT_TIMEOUT).await;
    let p = providers.clone();
    let configured = tokio::task::spawn_blocking(move || p.list())
        .await
        .map_err(|e| Error::InvalidInput(e.to_string()))??;
    Ok(candidates
        .into_iter()
        .filter_map(|(preset, url)| {
            let (_, models) = found.iter().find(|(u, _)| *u == url)?;
            Some(DetectedServer {
                preset,
                configured_as: configured
                    .iter()
                    .find(|c| c.base_url.trim_end_matches('/') == url)
                    .map(|c| c.name.clone()),
                base_url: url,
                models: models.clone(),
            })
        })
        .collect())
}
