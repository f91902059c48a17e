//! Compute Engine, over its REST API: a node pool's live size (its instance groups' target
//! sizes) and the GPUs of accelerator types.

use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::time::Duration;

/// Compute Engine, for the one thing GKE's API does not say: how many nodes a pool has now.
/// GKE keeps a pool's size in its managed instance groups; the pool's `initialNodeCount` is
/// what it was created with and never changes.
pub(crate) struct Compute {
    pub(crate) http: reqwest::Client,
    pub(crate) credentials: google_cloud_auth::credentials::AccessTokenCredentials,
    pub(crate) endpoint: String,
    /// Accelerator types by zone and name, as Compute Engine answered (`None`: it has no such
    /// type there). Failed lookups are not kept.
    pub(crate) accelerators: std::sync::Mutex<BTreeMap<(String, String), Option<String>>>,
}

/// An accelerator type's model and memory from its description (`NVIDIA A100 80GB`,
/// `NVIDIA H100 Mega 80GB`, `NVIDIA T4`); the memory from the built-in table where the
/// description gives none.
fn described_gpu(description: &str) -> Option<(String, u32, bool)> {
    let words: Vec<&str> = description
        .split_whitespace()
        .filter(|w| !w.eq_ignore_ascii_case("NVIDIA") && !w.eq_ignore_ascii_case("Tesla"))
        .collect();
    let model = (*words.first()?).to_owned();
    let memory = words
        .iter()
        .find_map(|w| w.strip_suffix("GB").and_then(|n| n.parse::<u32>().ok()));
    match memory {
        Some(gb) => Some((model, gb, false)),
        None => {
            let gb = gpustack_provider_sdk::catalog::memory_of_model(&model)?;
            Some((model, gb, true))
        }
    }
}

impl Compute {
    /// The model and memory of an accelerator type in a zone, from Compute Engine's
    /// `acceleratorTypes.get`; `Ok(None)` when the zone has no such type.
    pub(crate) async fn accelerator(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<Option<(String, u32, bool)>, String> {
        let key = (zone.to_owned(), name.to_owned());
        if let Some(known) = self
            .accelerators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(known.as_deref().and_then(described_gpu));
        }
        let path = format!("projects/{project}/zones/{zone}/acceleratorTypes/{name}");
        let description = match self.get(&path).await {
            Ok(body) => body["description"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{path}: the answer has no description"))?,
            Err((Some(404), _)) => {
                self.accelerators
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, None);
                return Ok(None);
            }
            Err((_, why)) => return Err(why),
        };
        let gpu = described_gpu(&description);
        self.accelerators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Some(description));
        gpu.map(Some)
            .ok_or_else(|| format!("{path}: no GPU model in its description"))
    }

    /// The target size of one managed instance group, by the URL GKE gives for it
    /// (`https://www.googleapis.com/compute/v1/projects/P/zones/Z/instanceGroupManagers/N`).
    pub(crate) async fn target_size(&self, url: &str) -> Result<f64, String> {
        let path = url
            .split_once("/compute/v1/")
            .map(|(_, rest)| rest)
            .ok_or_else(|| format!("{url} is not a Compute Engine instance group URL"))?;
        let body = self.get(path).await.map_err(|(_, why)| why)?;
        body["targetSize"]
            .as_f64()
            .or_else(|| body["targetSize"].as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| format!("{path}: the answer has no targetSize"))
    }

    /// GET of a Compute Engine resource, retried on throttling, server errors and broken
    /// connections; an error with its HTTP status, if one came.
    async fn get(&self, path: &str) -> Result<Json, (Option<u16>, String)> {
        let token = self
            .credentials
            .access_token()
            .await
            .map_err(|e| (None, gpustack_protocol::error_chain(&e)))?;
        let address = format!("{}/compute/v1/{path}", self.endpoint);
        let mut delay = Duration::from_millis(500);
        for attempt in 1..=6 {
            let answer = self
                .http
                .get(&address)
                .bearer_auth(&token.token)
                .send()
                .await;
            let retry = match answer {
                Ok(r) if r.status().is_success() => {
                    return r.json().await.map_err(|e| (None, e.to_string()));
                }
                Ok(r) if matches!(r.status().as_u16(), 429 | 500 | 502 | 503 | 504) => {
                    format!("{path}: {}", r.status())
                }
                Ok(r) => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    return Err((Some(status.as_u16()), format!("{path}: {status}: {text}")));
                }
                Err(e) => gpustack_protocol::error_chain(&e),
            };
            if attempt == 6 {
                return Err((None, retry));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
        Err((None, format!("{path}: no answer")))
    }
}

#[cfg(test)]
mod tests {
    use super::described_gpu;

    #[test]
    fn an_accelerator_types_description_names_its_gpu() {
        assert_eq!(
            described_gpu("NVIDIA A100 80GB"),
            Some(("A100".into(), 80, false))
        );
        assert_eq!(
            described_gpu("NVIDIA H100 Mega 80GB"),
            Some(("H100".into(), 80, false))
        );
        assert_eq!(described_gpu("NVIDIA T4"), Some(("T4".into(), 16, true)));
        assert_eq!(
            described_gpu("NVIDIA Tesla V100"),
            Some(("V100".into(), 16, true))
        );
        assert_eq!(described_gpu("NVIDIA X9"), None);
    }
}
