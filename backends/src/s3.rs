//! The s3 backend: the state in one object, the lock in another written only if absent.
//!
//! **Invariant:** every state write is conditional: `If-Match` on the ETag this process last
//! read or wrote, or `If-None-Match: *` when there was no state. A concurrent writer makes the
//! write fail with 412, never disappear. The lock object `KEY.lock` is created with
//! `If-None-Match: *`, so of two runs exactly one gets it; it is renewed (`If-Match` on its own
//! ETag) every third of `lock_ttl`, and a lock that a waiting run has watched unchanged for
//! `lock_ttl` on its own monotonic clock is taken over with `If-Match` on the expired lock's
//! ETag, so that of two runs that both see it expired only one takes it. The times in the lock
//! object are for people: no decision compares them with a clock.
//!
//! Every write of the lock object carries a marker of its own (`write`), so that a renewal
//! whose answer was lost and whose retry then failed its condition (412: the first attempt
//! had succeeded) recognises its own write in the object and is not taken for a lost lock
//! (`world::backends::s3_a_renewal_whose_answer_was_lost_is_not_a_lost_lock`).

use crate::remote::{Expiry, Renewal, keep_renewing, lock_ttl, recorded_ttl, takeover_notice};
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use gpustack_state::encryption::Target;
use gpustack_state::{
    Backend, BoxError, Encryption, Fence, LockError, LockGuard, LockInfo, S3Config, State,
    StateError, WriteFence,
};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    /// The lock this handle took, which its state writes check.
    fence: WriteFence,
}

/// What the lock object holds: who, the TTL it renews within, and a marker of the write.
#[derive(Serialize, Deserialize)]
struct LockRecord {
    #[serde(flatten)]
    info: LockInfo,
    /// Seconds since the epoch of the last renewal, by the holder's clock: for people only.
    renewed: u64,
    ttl_seconds: u64,
    /// Unique to each write of the lock object: a waiter sees every renewal as a change, and
    /// a writer can tell its own write from another.
    #[serde(default)]
    write: String,
}

impl LockRecord {
    fn new(info: &LockInfo, ttl: Duration) -> Self {
        Self {
            info: info.clone(),
            renewed: epoch_seconds(),
            ttl_seconds: ttl.as_secs(),
            write: uuid::Uuid::new_v4().to_string(),
        }
    }
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
        let settings = gpustack_connect::aws::AwsSettings {
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
            fence: WriteFence::default(),
        })
    }

    /// States written encrypted, and read through the same configuration.
    pub fn with_encryption(mut self, encryption: Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// The guard of a lock we wrote with `etag`, the first write that could have taken it
    /// sent at `acquired`: renewed until released.
    fn guard(
        &self,
        info: &LockInfo,
        etag: String,
        acquired: Instant,
        notice: Option<String>,
    ) -> LockGuard {
        let fence = Fence::new();
        fence.hold_until(acquired + crate::remote::vouched(self.lock_ttl));
        self.fence.arm(fence.clone());
        let current = Arc::new(Mutex::new(etag));
        let (client, bucket, key) = (self.client.clone(), self.bucket.clone(), self.lock_key());
        let (renewing, info_renewed, ttl) = (current.clone(), info.clone(), self.lock_ttl);
        let renewal = tokio::spawn(keep_renewing(
            self.lock_ttl,
            fence.clone(),
            acquired,
            move || {
                renew(
                    client.clone(),
                    bucket.clone(),
                    key.clone(),
                    info_renewed.clone(),
                    ttl,
                    renewing.clone(),
                )
            },
        ));
        let (client, bucket, key, id) = (
            self.client.clone(),
            self.bucket.clone(),
            self.lock_key(),
            info.id.clone(),
        );
        LockGuard::new(Box::pin(async move {
            release(&client, &bucket, &key, &id)
                .await
                .map_err(BoxError::from)
        }))
        .renewing(renewal, fence)
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

    /// The workspaces whose states this bucket holds beside the default one's: every key
    /// `PREFIX/WORKSPACE/KEY`, as Terraform's S3 backend lists them.
    pub async fn workspaces(&self, prefix: &str) -> Result<Vec<String>, StateError> {
        let location = format!("s3://{}/{prefix}/", self.bucket);
        let mut names = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(format!("{prefix}/"))
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| StateError::Read {
                location: location.clone(),
                source: gpustack_protocol::error_chain(&e).into(),
            })?;
            for object in page.contents() {
                let Some(rest) = object
                    .key()
                    .and_then(|k| k.strip_prefix(&format!("{prefix}/")))
                else {
                    continue;
                };
                if let Some((workspace, key)) = rest.split_once('/')
                    && key == self.key
                {
                    names.push(workspace.to_owned());
                }
            }
        }
        Ok(names)
    }

    /// An object's bytes and ETag; `None` when it does not exist.
    pub(crate) async fn get(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, BoxError> {
        get_object(&self.client, &self.bucket, key).await
    }

    async fn read_lock(&self) -> Result<Option<(LockRecord, Option<String>)>, LockError> {
        let found = self
            .get(&self.lock_key())
            .await
            .map_err(|source| LockError::Backend {
                location: self.lock_location(),
                source,
            })?;
        Ok(found.map(|(bytes, etag)| (parse_record(&bytes), etag)))
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
        self.fence.check(|| self.location())?;
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
        let mut expiry = Expiry::default();
        // When this process first sent a write that could have made the lock ours: a lost
        // answer may have come from any of them, and the earliest is the safe count.
        let mut first_write: Option<Instant> = None;
        loop {
            let (etag, notice) = match self.read_lock().await? {
                None => (None, None),
                // Our own write, whose answer was lost: adopt it.
                Some((held, Some(etag))) if held.info.id == info.id => {
                    let acquired = first_write.unwrap_or_else(Instant::now);
                    return Ok(self.guard(&info, etag, acquired, None));
                }
                Some((held, etag)) => {
                    let ttl = recorded_ttl(held.ttl_seconds);
                    let version = format!("{}/{}", etag.as_deref().unwrap_or_default(), held.write);
                    match expiry.check(&version, ttl) {
                        Some(watched) => (etag, Some(takeover_notice(&held.info, watched, ttl))),
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
            first_write.get_or_insert_with(Instant::now);
            let result = put_lock(
                &self.client,
                &self.bucket,
                &self.lock_key(),
                &LockRecord::new(&info, self.lock_ttl),
                etag.as_deref(),
            )
            .await;
            match result {
                Ok(Some(etag)) => {
                    let acquired = first_write.unwrap_or_else(Instant::now);
                    return Ok(self.guard(&info, etag, acquired, notice));
                }
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

    fn lock_ttl(&self) -> Option<Duration> {
        Some(self.lock_ttl)
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

    /// The state object, only as this process last saw it (`If-Match` on its ETag), so that a
    /// state someone else wrote since is never deleted unseen.
    async fn delete(&self) -> Result<(), StateError> {
        self.fence.check(|| self.location())?;
        let mut request = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(&self.key);
        if let Some(etag) = self.seen.before_write(self).await? {
            request = request.if_match(etag);
        }
        request
            .send()
            .await
            .map(|_| ())
            .map_err(|e| StateError::Write {
                location: self.location(),
                source: gpustack_protocol::error_chain(&e).into(),
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

/// The largest object read (a state, a note, a lock record): as the largest state file read
/// from disk, so that an object of any size never takes more memory than that.
const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// An object's body, bounded by its declared length and again while it is read (a length can
/// be missing or wrong).
async fn read_body(
    mut body: ByteStream,
    declared_length: Option<i64>,
) -> Result<Vec<u8>, BoxError> {
    let too_large = || -> BoxError {
        format!("the object is larger than {} MiB", MAX_OBJECT_BYTES >> 20).into()
    };
    let declared = declared_length.and_then(|n| u64::try_from(n).ok());
    if declared.is_some_and(|n| n > MAX_OBJECT_BYTES) {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(declared.unwrap_or(0)).unwrap_or(0));
    while let Some(chunk) = body.try_next().await? {
        if (bytes.len() + chunk.len()) as u64 > MAX_OBJECT_BYTES {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// An object's bytes and ETag; `None` when it does not exist.
async fn get_object(
    client: &Client,
    bucket: &str,
    key: &str,
) -> Result<Option<(Vec<u8>, Option<String>)>, BoxError> {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(output) => {
            let etag = output.e_tag().map(str::to_owned);
            let length = output.content_length();
            let bytes = read_body(output.body, length).await?;
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

/// A lock object's record; an unreadable one names no one and has the default TTL (it expires
/// only by being watched unchanged for that long).
fn parse_record(bytes: &[u8]) -> LockRecord {
    serde_json::from_slice(bytes).unwrap_or_else(|_| LockRecord {
        info: LockInfo::unreadable(),
        renewed: 0,
        ttl_seconds: DEFAULT_LOCK_TTL.as_secs(),
        write: String::new(),
    })
}

/// One renewal: the lock rewritten (with a new write marker), only if it is still the object
/// we last wrote. A write whose answer was lost is retried by the SDK, and the retry fails its
/// condition when the first attempt went through: the object then holds this very write.
async fn renew(
    client: Client,
    bucket: String,
    key: String,
    info: LockInfo,
    ttl: Duration,
    current: Arc<Mutex<String>>,
) -> Renewal {
    for _ in 0..3 {
        let etag = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let record = LockRecord::new(&info, ttl);
        match put_lock(&client, &bucket, &key, &record, Some(&etag)).await {
            Ok(Some(new)) => {
                *current.lock().unwrap_or_else(|e| e.into_inner()) = new;
                return Renewal::Renewed;
            }
            Ok(None) => return Renewal::Failed("the store answered without an ETag".into()),
            Err(e) if matches!(http_status(&e), Some(412 | 404)) => {
                match get_object(&client, &bucket, &key).await {
                    Ok(Some((bytes, Some(found_etag))))
                        if parse_record(&bytes).info.id == info.id =>
                    {
                        let ours_now = parse_record(&bytes).write == record.write;
                        *current.lock().unwrap_or_else(|e| e.into_inner()) = found_etag;
                        if ours_now {
                            return Renewal::Renewed;
                        }
                        // Still ours, from an earlier write whose answer was lost: renew on
                        // the ETag it has.
                    }
                    Ok(_) => {
                        return Renewal::Lost(format!(
                            "the state lock s3://{bucket}/{key} was removed or taken by someone else"
                        ));
                    }
                    Err(e) => return Renewal::Failed(e.to_string()),
                }
            }
            Err(e) => return Renewal::Failed(gpustack_protocol::error_chain(&e)),
        }
    }
    Renewal::Failed("the lock object kept changing".into())
}

/// Deletes the lock only while it is still ours; a conflicting change is looked at again.
async fn release(
    client: &Client,
    bucket: &str,
    key: &str,
    id: &str,
) -> Result<(), ReleaseLockError> {
    let failed = |source: BoxError| ReleaseLockError::Failed {
        object: format!("s3://{bucket}/{key}"),
        source,
    };
    for _ in 0..3 {
        let output = match client.get_object().bucket(bucket).key(key).send().await {
            Ok(output) => output,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(()),
            Err(e) => return Err(failed(Box::new(e))),
        };
        let etag = output.e_tag().map(str::to_owned);
        let length = output.content_length();
        let bytes = read_body(output.body, length).await.map_err(failed)?;
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
            Err(e) => return Err(failed(Box::new(e))),
        }
    }
    Err(ReleaseLockError::KeptChanging {
        object: format!("s3://{bucket}/{key}"),
    })
}

/// Why the lock object could not be given up.
#[derive(Debug, thiserror::Error)]
enum ReleaseLockError {
    #[error("{object}")]
    Failed {
        object: String,
        #[source]
        source: BoxError,
    },
    #[error("{object} kept changing")]
    KeptChanging { object: String },
}
