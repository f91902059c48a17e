//! The s3 backend: the state in one object, the lock in another written only if absent.
//!
//! **Invariant:** every state write is conditional: `If-Match` on the ETag this process last
//! read or wrote, or `If-None-Match: *` when there was no state. A concurrent writer makes the
//! write fail with 412, never disappear. The lock object `KEY.lock` is created with
//! `If-None-Match: *`, so of two runs exactly one gets it; it is renewed (`If-Match` on its own
//! ETag) every third of `lock_ttl`, and a lock not renewed for `lock_ttl` is taken over with
//! `If-Match` on the expired lock's ETag, so that of two runs that both see it expired only one
//! takes it.

use crate::remote::{Expiry, Renewal, keep_renewing, lock_ttl};
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use gpustack_state::encryption::Target;
use gpustack_state::{
    Backend, BoxError, Encryption, LockError, LockGuard, LockInfo, S3Config, State, StateError,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(120);
/// Object metadata naming the write that produced a state object, so that a write whose answer
/// was lost (and retried by the SDK into a 412) can recognise itself.
const WRITE_ID: &str = "gpustack-write-id";

pub struct S3Backend {
    client: Client,
    bucket: String,
    key: String,
    lock_ttl: Duration,
    /// The state object's ETag as this process last saw it; `Some(None)`: it saw none.
    seen: crate::remote::Seen<String>,
    encryption: Arc<Encryption>,
}

/// What the lock object holds: who, and until when the holder promises to renew.
#[derive(Serialize, Deserialize)]
struct LockRecord {
    #[serde(flatten)]
    info: LockInfo,
    /// Seconds since the epoch of the last renewal.
    renewed: u64,
    ttl_seconds: u64,
}

fn epoch_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn http_status<E>(error: &aws_sdk_s3::error::SdkError<E>) -> Option<u16> {
    error.raw_response().map(|r| r.status().as_u16())
}

impl S3Backend {
    pub async fn connect(config: &S3Config) -> Result<Self, StateError> {
        Self::connect_with(config, None).await
    }

    /// As [`S3Backend::connect`], with the given credentials instead of the standard chain.
    pub async fn connect_with(
        config: &S3Config,
        credentials: Option<aws_sdk_s3::config::SharedCredentialsProvider>,
    ) -> Result<Self, StateError> {
        let lock_ttl = lock_ttl("s3", config.lock_ttl.as_deref(), DEFAULT_LOCK_TTL)?;
        let settings = gpustack_connect::aws::Settings {
            region: config.region.clone(),
            profile: config.profile.clone(),
            endpoint: config.endpoint.clone(),
        };
        let mut loader = gpustack_connect::aws::loader(&settings);
        if let Some(credentials) = credentials {
            loader = loader.credentials_provider(credentials);
        }
        let shared = loader.load().await;
        let mut s3 = aws_sdk_s3::config::Builder::from(&shared);
        if let Some(path_style) = config.use_path_style {
            s3 = s3.force_path_style(path_style);
        }
        // S3-compatible stores often reject the CRC checksums the SDK sends by default.
        if config.endpoint.is_some() {
            s3 = s3.request_checksum_calculation(
                aws_sdk_s3::config::RequestChecksumCalculation::WhenRequired,
            );
        }
        Ok(Self {
            client: Client::from_conf(s3.build()),
            bucket: config.bucket.clone(),
            key: config.key.clone(),
            lock_ttl,
            seen: crate::remote::Seen::new(),
            encryption: Arc::new(Encryption::none(Target::State)),
        })
    }

    /// States written encrypted, and read through the same configuration.
    pub fn with_encryption(mut self, encryption: Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// The guard of a lock we wrote with `etag`: renewed until released.
    fn guard(&self, info: &LockInfo, etag: String, notice: Option<String>) -> LockGuard {
        let lost = Arc::new(AtomicBool::new(false));
        let current = Arc::new(Mutex::new(etag));
        let record = LockRecord {
            info: info.clone(),
            renewed: epoch_seconds(),
            ttl_seconds: self.lock_ttl.as_secs(),
        };
        let (client, bucket, key) = (self.client.clone(), self.bucket.clone(), self.lock_key());
        let renewing = current.clone();
        let renewal = tokio::spawn(keep_renewing(self.lock_ttl, lost.clone(), move || {
            renew(
                client.clone(),
                bucket.clone(),
                key.clone(),
                LockRecord {
                    info: record.info.clone(),
                    renewed: epoch_seconds(),
                    ttl_seconds: record.ttl_seconds,
                },
                renewing.clone(),
            )
        }));
        let (client, bucket, key, id) = (
            self.client.clone(),
            self.bucket.clone(),
            self.lock_key(),
            info.id.clone(),
        );
        LockGuard::new(Box::pin(async move {
            release(&client, &bucket, &key, &id).await
        }))
        .renewing(renewal, lost)
        .with_notice(notice)
    }

    fn lock_key(&self) -> String {
        format!("{}.lock", self.key)
    }

    fn note_key(&self, name: &str) -> String {
        format!("{}.{name}", self.key)
    }

    fn lock_location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.lock_key())
    }

    fn remember(&self, etag: Option<String>) {
        self.seen.remember(etag);
    }

    /// An object's bytes and ETag; `None` when it does not exist.
    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, Option<String>)>, BoxError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => {
                let etag = output.e_tag().map(str::to_owned);
                let bytes = output.body.collect().await?.into_bytes().to_vec();
                Ok(Some((bytes, etag)))
            }
            Err(e)
                if e.as_service_error().is_some_and(|s| s.is_no_such_key())
                    || http_status(&e) == Some(404) =>
            {
                Ok(None)
            }
            Err(e) => Err(gpustack_protocol::error_chain(&e).into()),
        }
    }

    async fn read_lock(&self) -> Result<Option<(LockRecord, Option<String>)>, LockError> {
        let found = self
            .get(&self.lock_key())
            .await
            .map_err(|source| LockError::Backend {
                location: self.lock_location(),
                source,
            })?;
        Ok(found.map(|(bytes, etag)| {
            // An unreadable lock expires only by being watched unchanged for the TTL.
            let record = serde_json::from_slice(&bytes).unwrap_or(LockRecord {
                info: LockInfo::unreadable(),
                renewed: epoch_seconds(),
                ttl_seconds: DEFAULT_LOCK_TTL.as_secs(),
            });
            (record, etag)
        }))
    }

    /// Writes the lock object: only if absent (`etag` None) or unchanged since read.
    async fn put_lock(
        client: &Client,
        bucket: &str,
        key: &str,
        record: &LockRecord,
        etag: Option<&str>,
    ) -> Result<
        Option<String>,
        aws_sdk_s3::error::SdkError<aws_sdk_s3::operation::put_object::PutObjectError>,
    > {
        let body = serde_json::to_vec_pretty(record).unwrap_or_default();
        let request = client
            .put_object()
            .bucket(bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(body));
        let request = match etag {
            Some(etag) => request.if_match(etag),
            None => request.if_none_match("*"),
        };
        request.send().await.map(|o| o.e_tag().map(str::to_owned))
    }

    /// The write ID and ETag of the state object, if it exists.
    async fn head_state(&self) -> Option<(Option<String>, Option<String>)> {
        let head = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(&self.key)
            .send()
            .await
            .ok()?;
        Some((
            head.metadata().and_then(|m| m.get(WRITE_ID)).cloned(),
            head.e_tag().map(str::to_owned),
        ))
    }
}

#[async_trait::async_trait]
impl Backend for S3Backend {
    fn location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    async fn read(&self) -> Result<Option<State>, StateError> {
        let found = self
            .get(&self.key)
            .await
            .map_err(|source| StateError::Read {
                location: self.location(),
                source,
            })?;
        let Some((bytes, etag)) = found else {
            self.remember(None);
            return Ok(None);
        };
        let bytes = self
            .encryption
            .open(&bytes)
            .await
            .map_err(|source| StateError::Read {
                location: self.location(),
                source: source.into(),
            })?;
        let state = State::decode(&bytes).map_err(|source| StateError::Decode {
            location: self.location(),
            source,
        })?;
        self.remember(etag);
        Ok(Some(state))
    }

    async fn write(&self, state: &State) -> Result<(), StateError> {
        let bytes = self
            .encryption
            .seal(state.encode(), None)
            .await
            .map_err(|source| StateError::Write {
                location: self.location(),
                source: source.into(),
            })?;
        let seen = self.seen.before_write(self).await?;
        let write_id = uuid::Uuid::new_v4().to_string();
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&self.key)
            .content_type("application/json")
            .metadata(WRITE_ID, &write_id)
            .body(ByteStream::from(bytes));
        let request = match &seen {
            Some(etag) => request.if_match(etag),
            None => request.if_none_match("*"),
        };
        let error = match request.send().await {
            Ok(output) if output.e_tag().is_some() => {
                self.remember(output.e_tag().map(str::to_owned));
                return Ok(());
            }
            Ok(_) => None,
            Err(e) => Some(e),
        };
        // The answer may be lost after the write happened (and a retry then fails its
        // condition): the object says whose it is.
        if let Some((Some(id), etag)) = self.head_state().await
            && id == write_id
        {
            self.remember(etag);
            return Ok(());
        }
        match error {
            Some(e) if matches!(http_status(&e), Some(412 | 409)) => Err(StateError::Conflict {
                location: self.location(),
                detail: match seen {
                    Some(etag) => format!("its ETag is no longer {etag}"),
                    None => "it was created meanwhile".to_owned(),
                },
            }),
            Some(e) => Err(StateError::Write {
                location: self.location(),
                source: gpustack_protocol::error_chain(&e).into(),
            }),
            None => Err(StateError::Write {
                location: self.location(),
                source: "the store answered without an ETag; conditional writes need one".into(),
            }),
        }
    }

    async fn lock(&self, info: LockInfo, timeout: Duration) -> Result<LockGuard, LockError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let record = |info: &LockInfo| LockRecord {
            info: info.clone(),
            renewed: epoch_seconds(),
            ttl_seconds: self.lock_ttl.as_secs(),
        };
        let mut expiry = Expiry::default();
        loop {
            let (etag, notice) = match self.read_lock().await? {
                None => (None, None),
                // Our own write, whose answer was lost: adopt it.
                Some((held, Some(etag))) if held.info.id == info.id => {
                    return Ok(self.guard(&info, etag, None));
                }
                Some((held, etag)) => {
                    let stamp_age =
                        Duration::from_secs(epoch_seconds().saturating_sub(held.renewed));
                    let ttl = Duration::from_secs(held.ttl_seconds);
                    match expiry.check(etag.as_deref().unwrap_or_default(), Some(stamp_age), ttl) {
                        Some(since) => {
                            let notice = format!(
                                "The lock held by {} (pid {}) for {} since {} expired: it was not renewed for {}s (lock TTL {}s). Taking it over.",
                                held.info.who,
                                held.info.pid,
                                held.info.operation,
                                held.info.created,
                                since.as_secs(),
                                held.ttl_seconds
                            );
                            (etag, Some(notice))
                        }
                        None if tokio::time::Instant::now() >= deadline => {
                            return Err(LockError::Held(Box::new(held.info)));
                        }
                        None => {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                    }
                }
            };
            let result = Self::put_lock(
                &self.client,
                &self.bucket,
                &self.lock_key(),
                &record(&info),
                etag.as_deref(),
            )
            .await;
            match result {
                Ok(Some(etag)) => return Ok(self.guard(&info, etag, notice)),
                Ok(None) => {
                    return Err(LockError::Backend {
                        location: self.lock_location(),
                        source: "the store answered without an ETag; conditional writes need one"
                            .into(),
                    });
                }
                // Someone else wrote or removed the lock between our read and write (or a
                // retried write of ours failed its condition): look again.
                Err(e) if matches!(http_status(&e), Some(412 | 409 | 404)) => continue,
                Err(e) => {
                    return Err(LockError::Backend {
                        location: self.lock_location(),
                        source: gpustack_protocol::error_chain(&e).into(),
                    });
                }
            }
        }
    }

    async fn force_unlock(&self, id: &str) -> Result<LockInfo, LockError> {
        let Some((held, etag)) = self.read_lock().await? else {
            return Err(LockError::NotLocked);
        };
        if held.info.id != id {
            return Err(LockError::WrongId {
                given: id.to_owned(),
                held: Box::new(held.info),
            });
        }
        let mut request = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(self.lock_key());
        if let Some(etag) = etag {
            request = request.if_match(etag);
        }
        request.send().await.map_err(|e| LockError::Backend {
            location: self.lock_location(),
            source: gpustack_protocol::error_chain(&e).into(),
        })?;
        Ok(held.info)
    }

    async fn read_note(&self, name: &str) -> Result<Option<Vec<u8>>, StateError> {
        self.get(&self.note_key(name))
            .await
            .map(|found| found.map(|(bytes, _)| bytes))
            .map_err(|source| StateError::Read {
                location: format!("s3://{}/{}", self.bucket, self.note_key(name)),
                source,
            })
    }

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(self.note_key(name))
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| StateError::Write {
                location: format!("s3://{}/{}", self.bucket, self.note_key(name)),
                source: gpustack_protocol::error_chain(&e).into(),
            })
    }
}

/// One renewal: the lock rewritten with a new renewal time, only if it is still the object we
/// last wrote.
async fn renew(
    client: Client,
    bucket: String,
    key: String,
    record: LockRecord,
    current: Arc<Mutex<String>>,
) -> Renewal {
    let etag = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match S3Backend::put_lock(&client, &bucket, &key, &record, Some(&etag)).await {
        Ok(Some(new)) => {
            *current.lock().unwrap_or_else(|e| e.into_inner()) = new;
            Renewal::Renewed
        }
        Ok(None) => Renewal::Failed("the store answered without an ETag".into()),
        Err(e) if matches!(http_status(&e), Some(412 | 404)) => Renewal::Lost(format!(
            "the state lock s3://{bucket}/{key} was removed or taken by someone else"
        )),
        Err(e) => Renewal::Failed(gpustack_protocol::error_chain(&e)),
    }
}

/// Deletes the lock only while it is still ours; a conflicting change is looked at again.
async fn release(client: &Client, bucket: &str, key: &str, id: &str) -> Result<(), String> {
    for _ in 0..3 {
        let output = match client.get_object().bucket(bucket).key(key).send().await {
            Ok(output) => output,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "s3://{bucket}/{key}: {}",
                    gpustack_protocol::error_chain(&e)
                ));
            }
        };
        let etag = output.e_tag().map(str::to_owned);
        let bytes = output
            .body
            .collect()
            .await
            .map_err(|e| format!("s3://{bucket}/{key}: {e}"))?
            .into_bytes();
        let ours = serde_json::from_slice::<LockRecord>(&bytes).is_ok_and(|r| r.info.id == id);
        if !ours {
            return Ok(());
        }
        let mut request = client.delete_object().bucket(bucket).key(key);
        if let Some(etag) = etag {
            request = request.if_match(etag);
        }
        match request.send().await {
            Ok(_) => return Ok(()),
            Err(e) if matches!(http_status(&e), Some(412)) => continue,
            Err(e) if matches!(http_status(&e), Some(404)) => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "s3://{bucket}/{key}: {}",
                    gpustack_protocol::error_chain(&e)
                ));
            }
        }
    }
    Err(format!("s3://{bucket}/{key} kept changing"))
}
