//! The kubernetes backend: the state in Secrets of a namespace, the lock in a Lease.
//!
//! The state is gzip-compressed into the index Secret `gpustack-state-SUFFIX`. When it is
//! larger than one Secret may be, it goes into chunk Secrets of a fresh generation
//! (`gpustack-state-SUFFIX-GEN-N`), written first; the index then switches to that generation
//! in one compare-and-swap write, and the previous generation is deleted. A reader that races
//! with that deletion reads the index again.
//!
//! **Invariant:** the index Secret is only written with the resourceVersion this process last
//! read or wrote (or created when it had none): a concurrent writer makes the write fail, never
//! disappear.
//!
//! The lock is the Lease `gpustack-lock-SUFFIX`: holder, operation and start time in it, renewed
//! every third of `lock_ttl` while the run lives, and cleared when the run ends (the Lease
//! stays, so that only a stack's first run creates it). A holder that stops renewing (killed, its
//! machine gone) loses the lock to a run that has watched the Lease keep one resourceVersion
//! for `lock_ttl` on its own monotonic clock; that run takes it over (conditional on that
//! resourceVersion) and says whose lock expired. The times written in the Lease are for people:
//! no decision reads them, so clocks of the machines need not agree.

use crate::remote::{Expiry, Renewal, keep_renewing, lock_ttl, recorded_ttl, takeover_notice};
use gpustack_state::encryption::Target;
use gpustack_state::{
    Backend, BoxError, Encryption, Fence, KubernetesConfig, LockError, LockGuard, LockInfo, State,
    StateError, WriteFence,
};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::{ByteString, jiff};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Secrets may hold 1 MiB of data; a chunk stays well below to leave room for metadata.
const CHUNK_BYTES: usize = 900 * 1024;
const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(120);
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
const STATE_LABEL: &str = "gpustack.dev/state";
const GENERATION_LABEL: &str = "gpustack.dev/generation";
const CHUNKS: &str = "gpustack.dev/chunks";
const DIGEST: &str = "gpustack.dev/sha256";
const SERIAL: &str = "gpustack.dev/serial";
const LINEAGE: &str = "gpustack.dev/lineage";
const LOCK_INFO: &str = "gpustack.dev/lock-info";
/// Which write produced an index, so that a write whose answer was lost can recognise itself.
const WRITE_ID: &str = "gpustack.dev/write-id";

pub struct KubernetesBackend {
    namespace: String,
    suffix: String,
    secrets: Api<Secret>,
    leases: Api<Lease>,
    lock_ttl: Duration,
    /// The index Secret as this process last read or wrote it; `Some(None)` when it saw that
    /// there was none.
    seen: crate::remote::Seen<Seen>,
    /// An encrypted state is the envelope of its gzip (ciphertext does not compress).
    encryption: Arc<Encryption>,
    /// The lock this handle took, which its state writes check.
    fence: WriteFence,
}

/// What a write needs of the index it replaces: its version, and the chunks it points to
/// (deleted once the new index is in place).
#[derive(Clone)]
struct Seen {
    version: Option<String>,
    chunks: Vec<String>,
}

fn connect_error(source: impl Into<BoxError>) -> StateError {
    StateError::Connect {
        kind: "kubernetes",
        source: source.into(),
    }
}

impl KubernetesBackend {
    pub async fn connect(config: &KubernetesConfig) -> Result<Self, StateError> {
        let lock_ttl = lock_ttl("kubernetes", config.lock_ttl.as_deref(), DEFAULT_LOCK_TTL)?;
        let client = client(config).await?;
        Ok(Self {
            namespace: config.namespace.clone(),
            suffix: config.secret_suffix.clone(),
            secrets: Api::namespaced(client.clone(), &config.namespace),
            leases: Api::namespaced(client, &config.namespace),
            lock_ttl,
            seen: crate::remote::Seen::new(),
            encryption: Arc::new(Encryption::none(Target::State)),
            fence: WriteFence::default(),
        })
    }

    /// States written encrypted, and read through the same configuration.
    pub fn with_encryption(mut self, encryption: Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// The workspaces whose states this namespace holds beside the default one's: every
    /// index Secret `gpustack-state-WORKSPACE-SUFFIX` of this stack's suffix.
    pub async fn workspaces(&self) -> Result<Vec<String>, StateError> {
        let params = kube::api::ListParams::default()
            .labels(&format!("{MANAGED_BY}=gpustack,!{GENERATION_LABEL}"));
        let list = self
            .secrets
            .list_metadata(&params)
            .await
            .map_err(|e| self.read_error(e))?;
        let end = format!("-{}", self.suffix);
        Ok(list
            .items
            .iter()
            .filter_map(|secret| {
                let name = secret.metadata.name.as_deref()?;
                let workspace = name.strip_prefix("gpustack-state-")?.strip_suffix(&end)?;
                (gpustack_state::check_workspace_name(workspace).is_ok()
                    && secret.metadata.labels.as_ref()?.get(STATE_LABEL)?
                        == &format!("{workspace}-{}", self.suffix))
                    .then(|| workspace.to_owned())
            })
            .collect())
    }

    fn index_name(&self) -> String {
        format!("gpustack-state-{}", self.suffix)
    }

    fn lease_name(&self) -> String {
        format!("gpustack-lock-{}", self.suffix)
    }

    fn labels(&self, generation: Option<&str>) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (MANAGED_BY.to_owned(), "gpustack".to_owned()),
            (STATE_LABEL.to_owned(), self.suffix.clone()),
        ]);
        if let Some(generation) = generation {
            labels.insert(GENERATION_LABEL.to_owned(), generation.to_owned());
        }
        labels
    }

    fn remember(&self, index: Option<&Secret>) {
        let seen = index.map(|index| Seen {
            version: index.metadata.resource_version.clone(),
            chunks: self.chunk_names(index),
        });
        self.seen.remember(seen);
    }

    /// The chunk Secrets an index points to.
    fn chunk_names(&self, index: &Secret) -> Vec<String> {
        let annotations = index.metadata.annotations.clone().unwrap_or_default();
        let count: usize = annotations
            .get(CHUNKS)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let generation = annotations
            .get(GENERATION_LABEL)
            .cloned()
            .unwrap_or_default();
        (0..count)
            .map(|n| format!("{}-{generation}-{n}", self.index_name()))
            .collect()
    }

    async fn delete_secrets(&self, names: &[String]) {
        for name in names {
            let _ = self.secrets.delete(name, &DeleteParams::default()).await;
        }
    }

    fn read_error(&self, source: impl Into<BoxError>) -> StateError {
        StateError::Read {
            location: self.location(),
            source: source.into(),
        }
    }

    fn write_error(&self, source: impl Into<BoxError>) -> StateError {
        StateError::Write {
            location: self.location(),
            source: source.into(),
        }
    }

    /// The compressed state the index points at; `Err(None)` when a chunk was missing or did
    /// not match (a writer replaced the generation meanwhile).
    async fn assemble(&self, index: &Secret) -> Result<Vec<u8>, Option<StateError>> {
        let chunks = self.chunk_names(index);
        if chunks.is_empty() {
            return index
                .data
                .as_ref()
                .and_then(|d| d.get("state"))
                .map(|b| b.0.clone())
                .ok_or_else(|| Some(self.read_error("the index Secret has no state key")));
        }
        let mut blob = Vec::new();
        for name in &chunks {
            match self.secrets.get_opt(name).await {
                Ok(Some(chunk)) => match chunk.data.as_ref().and_then(|d| d.get("chunk")) {
                    Some(bytes) => blob.extend_from_slice(&bytes.0),
                    None => return Err(None),
                },
                Ok(None) => return Err(None),
                Err(e) => return Err(Some(self.read_error(e))),
            }
        }
        let digest = index
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DIGEST));
        if digest != Some(&sha256_hex(&blob)) {
            return Err(None);
        }
        Ok(blob)
    }

    fn lock_error(&self, source: impl Into<BoxError>) -> LockError {
        LockError::Backend {
            location: format!(
                "Lease {} in namespace {}",
                self.lease_name(),
                self.namespace
            ),
            source: source.into(),
        }
    }

    fn note_name(&self, name: &str) -> String {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        format!("gpustack-note-{}-{clean}", self.suffix)
    }
}

pub(crate) async fn client(config: &KubernetesConfig) -> Result<kube::Client, StateError> {
    let settings = gpustack_connect::kubernetes::KubeSettings {
        config_paths: config.kubeconfig_files(),
        context: config.context.clone(),
        cluster: config.cluster.clone(),
        user: config.user.clone(),
        in_cluster: config.in_cluster,
        ..Default::default()
    };
    gpustack_connect::kubernetes::client(&settings)
        .await
        .map_err(connect_error)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// A gzip-compressed state, decompressed to at most the largest state gpustack reads: a few
/// kilobytes of a crafted stream could otherwise expand past memory.
pub(crate) fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let limit = gpustack_state::terraform::MAX_BYTES;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it decompresses to more than {} MiB",
            limit >> 20
        )));
    }
    Ok(out)
}

fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

fn lock_info_of(lease: &Lease) -> LockInfo {
    lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LOCK_INFO))
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_else(|| {
            let mut info = LockInfo::unreadable();
            if let Some(holder) = lease.spec.as_ref().and_then(|s| s.holder_identity.clone()) {
                info.id = holder;
            }
            info
        })
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
}

fn is_held(lease: &Lease) -> bool {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .is_some_and(|h| !h.is_empty())
}

#[async_trait::async_trait]
impl Backend for KubernetesBackend {
    fn location(&self) -> String {
        format!(
            "Secret {} in namespace {}",
            self.index_name(),
            self.namespace
        )
    }

    async fn read(&self) -> Result<Option<State>, StateError> {
        for attempt in 0..6u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
            let index = match self.secrets.get_opt(&self.index_name()).await {
                Ok(Some(index)) => index,
                Ok(None) => {
                    self.remember(None);
                    return Ok(None);
                }
                Err(e) => return Err(self.read_error(e)),
            };
            let blob = match self.assemble(&index).await {
                Ok(blob) => blob,
                Err(Some(e)) => return Err(e),
                Err(None) => continue,
            };
            let blob = self
                .encryption
                .open(&blob)
                .await
                .map_err(|e| self.read_error(e))?;
            let json = gunzip(&blob).map_err(|e| self.read_error(e))?;
            let state = State::decode(&json).map_err(|source| StateError::Decode {
                location: self.location(),
                source,
            })?;
            self.remember(Some(&index));
            return Ok(Some(state));
        }
        Err(self.read_error(
            "its chunks kept changing while being read: another writer is writing the state",
        ))
    }

    async fn write(&self, state: &State) -> Result<(), StateError> {
        self.fence.check(|| self.location())?;
        let seen = self.seen.before_write(self).await?;
        let write_id = uuid::Uuid::new_v4().to_string();
        let blob = self
            .encryption
            .seal(gzip(&state.encode()), None)
            .await
            .map_err(|e| self.write_error(e))?;
        let mut annotations = BTreeMap::from([
            (SERIAL.to_owned(), state.serial.to_string()),
            (LINEAGE.to_owned(), state.lineage.clone()),
            (WRITE_ID.to_owned(), write_id.clone()),
        ]);
        let mut data = BTreeMap::new();
        let mut created = Vec::new();
        if blob.len() <= CHUNK_BYTES {
            annotations.insert(CHUNKS.to_owned(), "0".to_owned());
            data.insert("state".to_owned(), ByteString(blob));
        } else {
            let generation = write_id[..8].to_owned();
            for (n, chunk) in blob.chunks(CHUNK_BYTES).enumerate() {
                let name = format!("{}-{generation}-{n}", self.index_name());
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(self.labels(Some(&generation))),
                        ..Default::default()
                    },
                    data: Some(BTreeMap::from([(
                        "chunk".to_owned(),
                        ByteString(chunk.to_vec()),
                    )])),
                    type_: Some("Opaque".to_owned()),
                    ..Default::default()
                };
                if let Err(e) = self.secrets.create(&PostParams::default(), &secret).await {
                    self.delete_secrets(&created).await;
                    return Err(self.write_error(e));
                }
                created.push(name);
            }
            annotations.insert(CHUNKS.to_owned(), created.len().to_string());
            annotations.insert(GENERATION_LABEL.to_owned(), generation);
            annotations.insert(DIGEST.to_owned(), sha256_hex(&blob));
        }
        let previous_version = seen.as_ref().and_then(|s| s.version.clone());
        let index = Secret {
            metadata: ObjectMeta {
                name: Some(self.index_name()),
                labels: Some(self.labels(None)),
                annotations: Some(annotations),
                resource_version: previous_version.clone(),
                ..Default::default()
            },
            data: Some(data),
            type_: Some("Opaque".to_owned()),
            ..Default::default()
        };
        let result = match &seen {
            Some(_) => {
                self.secrets
                    .replace(&self.index_name(), &PostParams::default(), &index)
                    .await
            }
            None => self.secrets.create(&PostParams::default(), &index).await,
        };
        let outcome = match result {
            Ok(written) => Ok(written),
            // The answer may be lost after the write happened: the index says whose it is.
            Err(e) => match self.secrets.get_opt(&self.index_name()).await {
                Ok(Some(current))
                    if current
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(WRITE_ID))
                        == Some(&write_id) =>
                {
                    Ok(current)
                }
                _ => Err(e),
            },
        };
        match outcome {
            Ok(written) => {
                self.remember(Some(&written));
                // The chunks the replaced index pointed to; never the ones just written.
                let stale: Vec<String> = seen
                    .map(|s| s.chunks)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|name| !created.contains(name))
                    .collect();
                self.delete_secrets(&stale).await;
                Ok(())
            }
            Err(e) => {
                self.delete_secrets(&created).await;
                if is_status(&e, 409) {
                    Err(StateError::Conflict {
                        location: self.location(),
                        detail: match previous_version {
                            Some(version) => format!("its resourceVersion is no longer {version}"),
                            None => "it was created meanwhile".to_owned(),
                        },
                    })
                } else {
                    Err(self.write_error(e))
                }
            }
        }
    }

    async fn lock(&self, info: LockInfo, timeout: Duration) -> Result<LockGuard, LockError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let ttl_seconds = i32::try_from(self.lock_ttl.as_secs()).unwrap_or(i32::MAX);
        let info_json = serde_json::to_string(&info).unwrap_or_default();
        let mine = |resource_version: Option<String>| Lease {
            metadata: ObjectMeta {
                name: Some(self.lease_name()),
                labels: Some(self.labels(None)),
                annotations: Some(BTreeMap::from([(LOCK_INFO.to_owned(), info_json.clone())])),
                resource_version,
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(info.id.clone()),
                lease_duration_seconds: Some(ttl_seconds),
                acquire_time: Some(now_micro()),
                renew_time: Some(now_micro()),
                ..Default::default()
            }),
        };
        let mut expiry = Expiry::default();
        // When this process first sent a write that could have made the Lease ours: a lost
        // answer may have come from any of them, and the earliest is the safe count.
        let mut first_write: Option<Instant> = None;
        loop {
            let (result, notice) = match self.leases.get_opt(&self.lease_name()).await {
                Err(e) => return Err(self.lock_error(e)),
                Ok(None) => {
                    first_write.get_or_insert_with(Instant::now);
                    (
                        self.leases
                            .create(&PostParams::default(), &mine(None))
                            .await,
                        None,
                    )
                }
                // Our own create, whose answer was lost.
                Ok(Some(lease)) if holder(&lease) == Some(info.id.as_str()) => (Ok(lease), None),
                Ok(Some(lease)) => {
                    let version = lease.metadata.resource_version.clone();
                    let ttl = recorded_ttl(
                        lease
                            .spec
                            .as_ref()
                            .and_then(|s| s.lease_duration_seconds)
                            .and_then(|s| u64::try_from(s).ok())
                            .unwrap_or(self.lock_ttl.as_secs()),
                    );
                    let expired = expiry.check(version.as_deref().unwrap_or_default(), ttl);
                    if !is_held(&lease) {
                        first_write.get_or_insert_with(Instant::now);
                        (
                            self.leases
                                .replace(&self.lease_name(), &PostParams::default(), &mine(version))
                                .await,
                            None,
                        )
                    } else if let Some(watched) = expired {
                        let notice = takeover_notice(&lock_info_of(&lease), watched, ttl);
                        first_write.get_or_insert_with(Instant::now);
                        (
                            self.leases
                                .replace(&self.lease_name(), &PostParams::default(), &mine(version))
                                .await,
                            Some(notice),
                        )
                    } else if tokio::time::Instant::now() >= deadline {
                        return Err(LockError::Held(Box::new(lock_info_of(&lease))));
                    } else {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                }
            };
            match result {
                Ok(_) => {
                    let fence = Fence::new();
                    let acquired = first_write.unwrap_or_else(Instant::now);
                    fence.hold_until(acquired + crate::remote::vouched(self.lock_ttl));
                    self.fence.arm(fence.clone());
                    let (leases, name, id) =
                        (self.leases.clone(), self.lease_name(), info.id.clone());
                    let renewal = tokio::spawn(keep_renewing(
                        self.lock_ttl,
                        fence.clone(),
                        acquired,
                        move || renew(leases.clone(), name.clone(), id.clone()),
                    ));
                    let (leases, name, id) =
                        (self.leases.clone(), self.lease_name(), info.id.clone());
                    return Ok(LockGuard::new(Box::pin(async move {
                        release(leases, name, id).await.map_err(BoxError::from)
                    }))
                    .renewing(renewal, fence)
                    .with_notice(notice));
                }
                // Someone else created, changed or removed the Lease between our read and
                // write: look again.
                Err(e) if is_status(&e, 409) || is_status(&e, 404) => continue,
                Err(e) => return Err(self.lock_error(e)),
            }
        }
    }

    fn lock_ttl(&self) -> Option<Duration> {
        Some(self.lock_ttl)
    }

    async fn force_unlock(&self, id: &str) -> Result<LockInfo, LockError> {
        let lease = match self.leases.get_opt(&self.lease_name()).await {
            Ok(Some(lease)) if is_held(&lease) => lease,
            Ok(_) => return Err(LockError::NotLocked),
            Err(e) => return Err(self.lock_error(e)),
        };
        let held = lock_info_of(&lease);
        let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
        if holder.as_deref() != Some(id) {
            return Err(LockError::WrongId {
                given: id.to_owned(),
                held: Box::new(held),
            });
        }
        let params = DeleteParams::default().preconditions(Preconditions {
            resource_version: lease.metadata.resource_version.clone(),
            uid: None,
        });
        match self.leases.delete(&self.lease_name(), &params).await {
            Ok(_) => Ok(held),
            Err(e) if is_status(&e, 404) => Err(LockError::NotLocked),
            Err(e) => Err(self.lock_error(e)),
        }
    }

    async fn read_note(&self, name: &str) -> Result<Option<Vec<u8>>, StateError> {
        match self.secrets.get_opt(&self.note_name(name)).await {
            Ok(secret) => Ok(secret
                .and_then(|s| s.data)
                .and_then(|mut d| d.remove("note"))
                .map(|b| b.0)),
            Err(e) => Err(self.read_error(e)),
        }
    }

    /// The index Secret, only at the version this process last saw, then its chunks.
    async fn delete(&self) -> Result<(), StateError> {
        self.fence.check(|| self.location())?;
        let Some(seen) = self.seen.before_write(self).await? else {
            return Ok(());
        };
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: seen.version.clone(),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        match self.secrets.delete(&self.index_name(), &params).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(self.write_error(e)),
        }
        self.delete_secrets(&seen.chunks).await;
        Ok(())
    }

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.note_name(name)),
                labels: Some(self.labels(None)),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "note".to_owned(),
                ByteString(bytes.to_vec()),
            )])),
            type_: Some("Opaque".to_owned()),
            ..Default::default()
        };
        let params = kube::api::PatchParams::apply("gpustack").force();
        self.secrets
            .patch(
                &self.note_name(name),
                &params,
                &kube::api::Patch::Apply(&secret),
            )
            .await
            .map(|_| ())
            .map_err(|e| self.write_error(e))
    }
}

/// One renewal: a new renewTime on the Lease, while it is still ours.
async fn renew(leases: Api<Lease>, name: String, id: String) -> Renewal {
    let mut lease = match leases.get_opt(&name).await {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            return Renewal::Lost(format!(
                "the state lock {name} was removed by someone else (force-unlock?)"
            ));
        }
        Err(e) => return Renewal::Failed(e.to_string()),
    };
    if holder(&lease) != Some(id.as_str()) {
        return Renewal::Lost(format!("the state lock {name} is now held by someone else"));
    }
    let stamp = now_micro();
    if let Some(spec) = lease.spec.as_mut() {
        spec.renew_time = Some(stamp.clone());
    }
    match leases.replace(&name, &PostParams::default(), &lease).await {
        Ok(_) => Renewal::Renewed,
        // The answer may be lost after the write happened (and a retry then conflicts): the
        // Lease says whether it carries this renewal.
        Err(e) => match leases.get_opt(&name).await {
            Ok(Some(now))
                if holder(&now) == Some(id.as_str())
                    && now.spec.as_ref().and_then(|s| s.renew_time.as_ref()) == Some(&stamp) =>
            {
                Renewal::Renewed
            }
            _ => Renewal::Failed(e.to_string()),
        },
    }
}

/// Gives the lock up while it is still ours: the Lease is kept with no holder, as client-go's
/// leader election releases one, so that it is created once, by the stack's first run, and a
/// run that may only `get` and `update` it by name (a drift Job's service account; `create`
/// cannot be limited to a name) takes it as well. The write carries the resourceVersion read:
/// a conflicting change is looked at again.
async fn release(leases: Api<Lease>, name: String, id: String) -> Result<(), ReleaseLockError> {
    for _ in 0..3 {
        let mut lease = match leases.get_opt(&name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return Ok(()),
            Err(source) => return Err(ReleaseLockError::Api { name, source }),
        };
        if holder(&lease) != Some(id.as_str()) {
            return Ok(());
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.acquire_time = None;
            spec.renew_time = None;
        }
        if let Some(annotations) = lease.metadata.annotations.as_mut() {
            annotations.remove(LOCK_INFO);
        }
        match leases.replace(&name, &PostParams::default(), &lease).await {
            Ok(_) => return Ok(()),
            Err(e) if is_status(&e, 409) => continue,
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(source) => return Err(ReleaseLockError::Api { name, source }),
        }
    }
    Err(ReleaseLockError::KeptChanging { name })
}

/// Why the lock's Lease could not be given up.
#[derive(Debug, thiserror::Error)]
enum ReleaseLockError {
    #[error("Lease {name}")]
    Api {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Lease {name} kept changing")]
    KeptChanging { name: String },
}
