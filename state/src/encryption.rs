//! Encryption at rest of states and saved plans: AES-256-GCM under a key from a passphrase
//! (PBKDF2) or from a key management service, as OpenTofu's `encryption` block configures it.
//!
//! What is stored is an envelope: JSON naming the method and key provider that made it, the
//! key provider's metadata (a PBKDF2 salt and parameters, a data key as the KMS encrypted it),
//! a random nonce and the ciphertext. The header is the cipher's associated data: altering it,
//! or passing a plan's envelope off as a state, fails the decryption.
//!
//! Key providers other than PBKDF2 reach a network, so they are not here (this crate depends
//! on no SDK): they implement [`KeyProvider`] elsewhere (`gpustack-backends` has AWS KMS) and
//! are handed to [`Encryptions::new`].
//!
//! **Invariant:** nothing encrypted is ever read as absent or empty: an envelope with no key
//! configured, a wrong key, or plaintext where the configuration does not accept it is an
//! error. Writes always use the primary method; a fallback only decrypts, so what was read
//! with an old key is written with the new one by the next write.
//!
//! **Invariant:** passphrases and keys stay in this module and the providers: their `Debug`
//! is redacted, they are zeroed when dropped, and no error or envelope holds them.

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use zeroize::Zeroizing;

/// The version of the envelope format.
const ENVELOPE_VERSION: u32 = 1;
/// OpenTofu's default and floor for PBKDF2 with SHA-512 (OWASP's recommendation).
pub const DEFAULT_ITERATIONS: u32 = 600_000;
pub const MIN_ITERATIONS: u32 = 200_000;
/// The most iterations a configuration may ask for, and an envelope may name: an envelope
/// read from a file is not trusted to set the cost of reading it (2³²−1 iterations would
/// take tens of minutes), so one outside the bounds a configuration could choose is refused
/// before anything is derived.
pub const MAX_ITERATIONS: u32 = 1_000_000;
/// The bounds of a salt's length, in bytes, for configurations and envelopes alike.
pub const MIN_SALT_LENGTH: usize = 16;
pub const MAX_SALT_LENGTH: usize = 512;
pub const MIN_PASSPHRASE_LEN: usize = 16;
const DEFAULT_SALT_LENGTH: usize = 32;

/// What is encrypted: the two never share an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    State,
    Plan,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::State => "state",
            Target::Plan => "plan",
        }
    }
}

/// A passphrase: zeroed when dropped, never shown.
#[derive(Clone)]
pub struct Passphrase(Zeroizing<String>);

impl Passphrase {
    pub fn new(text: String) -> Self {
        Passphrase(Zeroizing::new(text))
    }

    fn bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    pub fn len(&self) -> usize {
        self.0.chars().count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Passphrase(..)")
    }
}

/// A 256-bit key: zeroed when dropped, never shown.
#[derive(Clone)]
pub struct DataKey(Zeroizing<[u8; 32]>);

impl DataKey {
    /// A key of exactly 32 bytes (AES-256).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, KeyError> {
        let array: [u8; 32] = bytes.try_into().map_err(|_| {
            KeyError::new(format!(
                "the key is {} bytes long; AES-256 takes 32",
                bytes.len()
            ))
        })?;
        Ok(DataKey(Zeroizing::new(array)))
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HashFunction {
    Sha256,
    Sha512,
}

/// `key_provider "pbkdf2" "NAME"`.
#[derive(Debug, Clone)]
pub struct Pbkdf2Config {
    pub passphrase: Passphrase,
    pub iterations: u32,
    pub hash_function: HashFunction,
    pub salt_length: usize,
}

impl Pbkdf2Config {
    pub fn new(passphrase: Passphrase) -> Self {
        Self {
            passphrase,
            iterations: DEFAULT_ITERATIONS,
            hash_function: HashFunction::Sha512,
            salt_length: DEFAULT_SALT_LENGTH,
        }
    }
}

/// `key_provider "aws_kms" "NAME"`: envelope encryption with a data key from
/// GenerateDataKey, kept in the envelope as the KMS encrypted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsKmsConfig {
    pub kms_key_id: String,
    pub key_spec: String,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    pub profile: Option<String>,
}

#[derive(Debug, Clone)]
pub enum KeyProviderConfig {
    Pbkdf2(Pbkdf2Config),
    AwsKms(AwsKmsConfig),
}

impl KeyProviderConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            KeyProviderConfig::Pbkdf2(_) => "pbkdf2",
            KeyProviderConfig::AwsKms(_) => "aws_kms",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MethodConfig {
    /// `method "aes_gcm" "NAME" { keys = key_provider.KIND.NAME }`.
    AesGcm { keys: String },
    /// `method "unencrypted" "NAME" {}`: plaintext, for migrating into or out of encryption.
    Unencrypted,
}

/// `state { ... }` or `plan { ... }`: the method to write with, and one more to read with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetConfig {
    pub method: String,
    pub fallback: Option<String>,
    /// Refuse a configuration that would write plaintext.
    pub enforced: bool,
}

/// The `encryption` block, evaluated: key providers and methods by `KIND.NAME`.
#[derive(Debug, Clone, Default)]
pub struct EncryptionConfig {
    pub key_providers: IndexMap<String, KeyProviderConfig>,
    pub methods: IndexMap<String, MethodConfig>,
    pub state: Option<TargetConfig>,
    pub plan: Option<TargetConfig>,
}

/// Why a key provider gave no key. Its text never holds a key or a passphrase.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(String);

impl KeyError {
    pub fn new(message: impl Into<String>) -> Self {
        KeyError(message.into())
    }
}

/// Where keys come from.
#[async_trait::async_trait]
pub trait KeyProvider: Send + Sync {
    /// A key to encrypt with, and the metadata (kept in clear in the envelope) from which
    /// [`KeyProvider::decryption_key`] finds it again.
    async fn encryption_key(&self) -> Result<(DataKey, serde_json::Value), KeyError>;

    /// The key an envelope with this metadata was encrypted with.
    async fn decryption_key(&self, meta: &serde_json::Value) -> Result<DataKey, KeyError>;
}

/// The keys a [`KeyProvider`] made or found in this run, so that a state read and written
/// again costs one key derivation or KMS call: the key writes use, with the metadata its
/// envelopes keep, and the keys found for envelopes, each under `K`, what tells one
/// envelope's key from another's (its metadata, or the part of it that names the key).
pub struct KeyCache<K> {
    writes: Mutex<Option<(DataKey, serde_json::Value)>>,
    found: Mutex<Vec<(K, DataKey)>>,
}

impl<K> Default for KeyCache<K> {
    fn default() -> Self {
        KeyCache {
            writes: Mutex::new(None),
            found: Mutex::new(Vec::new()),
        }
    }
}

impl<K: PartialEq> KeyCache<K> {
    /// The key writes use, with its metadata: the one chosen earlier in the run, else the one
    /// `make` makes, kept for the writes after it.
    pub async fn encryption_key(
        &self,
        make: impl AsyncFnOnce() -> Result<(DataKey, serde_json::Value), KeyError>,
    ) -> Result<(DataKey, serde_json::Value), KeyError> {
        let chosen = lock(&self.writes).clone();
        if let Some(chosen) = chosen {
            return Ok(chosen);
        }
        let (key, meta) = make().await?;
        *lock(&self.writes) = Some((key.clone(), meta.clone()));
        Ok((key, meta))
    }

    /// The key of the envelope `id` names: found earlier in the run, else found by `find` and
    /// kept. A key found anew that this configuration writes with (`writes_with`: the metadata
    /// its envelopes keep) becomes the key writes use, unless they have one: a state read and
    /// written again keeps the key it was read with.
    pub async fn decryption_key(
        &self,
        id: K,
        writes_with: Option<serde_json::Value>,
        find: impl AsyncFnOnce() -> Result<DataKey, KeyError>,
    ) -> Result<DataKey, KeyError> {
        let (key, anew) = self.lookup(id, find).await?;
        if anew && let Some(meta) = writes_with {
            lock(&self.writes).get_or_insert_with(|| (key.clone(), meta));
        }
        Ok(key)
    }

    /// The key `id` names: found earlier in the run, else found by `find` and kept, for the
    /// envelopes that name it later.
    pub async fn key(
        &self,
        id: K,
        find: impl AsyncFnOnce() -> Result<DataKey, KeyError>,
    ) -> Result<DataKey, KeyError> {
        self.lookup(id, find).await.map(|(key, _)| key)
    }

    /// As [`KeyCache::key`], with whether `find` found it.
    async fn lookup(
        &self,
        id: K,
        find: impl AsyncFnOnce() -> Result<DataKey, KeyError>,
    ) -> Result<(DataKey, bool), KeyError> {
        let known = lock(&self.found)
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, key)| key.clone());
        if let Some(key) = known {
            return Ok((key, false));
        }
        let key = find().await?;
        lock(&self.found).push((id, key.clone()));
        Ok((key, true))
    }
}

/// A lock whose holder panicked still guards whole values: each write replaces or appends one.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, thiserror::Error)]
pub enum EncryptionError {
    #[error("the encryption configuration is invalid: {0}")]
    Config(String),
    #[error(
        "the {what} is encrypted (method {method}, key provider {key_provider}), and no encryption is configured to read it: configure it in the stack's gpustack {{ encryption {{ ... }} }} block or in GPUSTACK_ENCRYPTION, with the key it was written with"
    )]
    NotConfigured {
        what: &'static str,
        method: String,
        key_provider: String,
    },
    #[error(
        "the {what} is not encrypted, and its encryption configuration has no unencrypted method to read it with. To encrypt an existing {what}, add fallback {{ method = method.unencrypted.NAME }} to the {what} block (with method \"unencrypted\" \"NAME\" {{}}) for the run that encrypts it"
    )]
    Unencrypted { what: &'static str },
    #[error(
        "cannot decrypt the {what} (written with method {method}, key provider {key_provider}): {tried}. The key is not the one it was written with, or the {what} was altered"
    )]
    Decrypt {
        what: &'static str,
        method: String,
        key_provider: String,
        tried: String,
    },
    #[error("this is an encrypted {found}, not a {what}")]
    WrongPurpose { what: &'static str, found: String },
    #[error("the {what}'s encryption envelope is damaged: {detail}")]
    Envelope { what: &'static str, detail: String },
    #[error("cannot encrypt the {what}: key provider {key_provider}: {source}")]
    Key {
        what: &'static str,
        key_provider: String,
        source: KeyError,
    },
}

/// The stored form of encrypted data.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    /// First, so that an envelope is told from plaintext by its first bytes.
    gpustack_encryption: u32,
    purpose: String,
    method: String,
    key_provider: String,
    key_meta: serde_json::Value,
    /// A plan's stack directory: where the configuration that decrypts it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stack_dir: Option<String>,
    nonce: String,
    ciphertext: String,
}

impl Envelope {
    /// The header, authenticated with the ciphertext.
    fn associated_data(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!([
            self.gpustack_encryption,
            self.purpose,
            self.method,
            self.key_provider,
            self.key_meta,
            self.stack_dir,
        ]))
        .unwrap_or_default()
    }
}

/// Whether stored bytes are an envelope rather than plaintext.
pub fn is_envelope(bytes: &[u8]) -> bool {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let head = &bytes[start..bytes.len().min(start + 64)];
    head.first() == Some(&b'{')
        && head
            .windows(b"\"gpustack_encryption\"".len())
            .any(|w| w == b"\"gpustack_encryption\"")
}

/// What an encrypted plan says in clear: the stack directory whose configuration decrypts it.
pub fn envelope_stack_dir(bytes: &[u8]) -> Option<String> {
    if !is_envelope(bytes) {
        return None;
    }
    serde_json::from_slice::<Envelope>(bytes).ok()?.stack_dir
}

#[derive(Clone)]
enum Method {
    Unencrypted,
    AesGcm {
        name: String,
        provider_name: String,
        provider: Arc<dyn KeyProvider>,
    },
}

/// How one target (states or plans) is written and read.
pub struct Encryption {
    target: Target,
    /// `None`: nothing configured, plaintext, and envelopes cannot be read.
    primary: Option<Method>,
    fallback: Option<Method>,
    /// Something was read that the primary method would not have written: the fallback
    /// decrypted it, or it was plaintext.
    read_otherwise: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let describe = |m: &Option<Method>| match m {
            None => "none".to_owned(),
            Some(Method::Unencrypted) => "unencrypted".to_owned(),
            Some(Method::AesGcm {
                name,
                provider_name,
                ..
            }) => format!("{name} ({provider_name})"),
        };
        f.debug_struct("Encryption")
            .field("target", &self.target)
            .field("primary", &describe(&self.primary))
            .field("fallback", &describe(&self.fallback))
            .finish()
    }
}

impl Encryption {
    /// No encryption: plaintext is written and read; an envelope is refused.
    pub fn none(target: Target) -> Self {
        Encryption {
            target,
            primary: None,
            fallback: None,
            read_otherwise: Default::default(),
        }
    }

    /// Whether something was read that the primary method would not have written (with the
    /// fallback's key, or in clear): writing it again encrypts it with the primary method.
    pub fn read_otherwise(&self) -> bool {
        self.read_otherwise
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The method writes use, for messages.
    pub fn primary_name(&self) -> Option<&str> {
        match &self.primary {
            Some(Method::AesGcm { name, .. }) => Some(name),
            _ => None,
        }
    }

    fn note_read_otherwise(&self) {
        self.read_otherwise
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether writes are encrypted.
    pub fn encrypts(&self) -> bool {
        matches!(self.primary, Some(Method::AesGcm { .. }))
    }

    /// Makes the primary method's key now (a KMS data key, a passphrase's derivation), so
    /// that sealing later does no I/O: a state write made from synchronous code inside the
    /// apply's walk must not wait on the network there.
    pub async fn prepare(&self) -> Result<(), EncryptionError> {
        if let Some(Method::AesGcm {
            provider_name,
            provider,
            ..
        }) = &self.primary
        {
            provider
                .encryption_key()
                .await
                .map_err(|source| EncryptionError::Key {
                    what: self.target.name(),
                    key_provider: provider_name.clone(),
                    source,
                })?;
        }
        Ok(())
    }

    /// The stored form of `plaintext`: an envelope under the primary method, or the plaintext
    /// when that method is `unencrypted` or none is configured. `stack_dir` is kept in clear in
    /// a plan's envelope.
    pub async fn seal(
        &self,
        plaintext: Vec<u8>,
        stack_dir: Option<&str>,
    ) -> Result<Vec<u8>, EncryptionError> {
        let what = self.target.name();
        let Some(Method::AesGcm {
            name,
            provider_name,
            provider,
        }) = &self.primary
        else {
            return Ok(plaintext);
        };
        let plaintext = Zeroizing::new(plaintext);
        let (key, meta) =
            provider
                .encryption_key()
                .await
                .map_err(|source| EncryptionError::Key {
                    what,
                    key_provider: provider_name.clone(),
                    source,
                })?;
        let cipher = Aes256Gcm::new_from_slice(key.0.as_slice()).map_err(|_| {
            EncryptionError::Config("the key provider gave a key of the wrong length".into())
        })?;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let mut envelope = Envelope {
            gpustack_encryption: ENVELOPE_VERSION,
            purpose: what.to_owned(),
            method: name.clone(),
            key_provider: provider_name.clone(),
            key_meta: meta,
            stack_dir: stack_dir.map(str::to_owned),
            nonce: BASE64.encode(nonce),
            ciphertext: String::new(),
        };
        let aad = envelope.associated_data();
        let ciphertext = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: &plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| EncryptionError::Envelope {
                what,
                detail: "AES-GCM refused to encrypt it".into(),
            })?;
        envelope.ciphertext = BASE64.encode(ciphertext);
        let mut bytes = serde_json::to_vec(&envelope).unwrap_or_default();
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// The plaintext of stored bytes: decrypted with the primary method or the fallback, or
    /// as they are when they are plaintext and an `unencrypted` method (or no configuration)
    /// accepts them.
    pub async fn open(&self, bytes: &[u8]) -> Result<Vec<u8>, EncryptionError> {
        let what = self.target.name();
        if !is_envelope(bytes) {
            let accepts_plaintext = matches!(self.primary, None | Some(Method::Unencrypted))
                || matches!(self.fallback, Some(Method::Unencrypted));
            return if accepts_plaintext {
                if self.encrypts() {
                    self.note_read_otherwise();
                }
                Ok(bytes.to_vec())
            } else {
                Err(EncryptionError::Unencrypted { what })
            };
        }
        let envelope: Envelope =
            serde_json::from_slice(bytes).map_err(|e| EncryptionError::Envelope {
                what,
                detail: e.to_string(),
            })?;
        if envelope.gpustack_encryption != ENVELOPE_VERSION {
            return Err(EncryptionError::Envelope {
                what,
                detail: format!(
                    "its format version is {}; this gpustack reads {ENVELOPE_VERSION}",
                    envelope.gpustack_encryption
                ),
            });
        }
        if envelope.purpose != what {
            return Err(EncryptionError::WrongPurpose {
                what,
                found: envelope.purpose.clone(),
            });
        }
        let mut candidates: Vec<(&String, &String, &Arc<dyn KeyProvider>)> =
            [self.primary.as_ref(), self.fallback.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|m| match m {
                    Method::AesGcm {
                        name,
                        provider_name,
                        provider,
                    } => Some((name, provider_name, provider)),
                    Method::Unencrypted => None,
                })
                .collect();
        if candidates.is_empty() {
            return Err(EncryptionError::NotConfigured {
                what,
                method: envelope.method.clone(),
                key_provider: envelope.key_provider.clone(),
            });
        }
        // The key provider that wrote it first: a wrong one costs a key derivation or a call.
        candidates.sort_by_key(|(_, provider_name, _)| **provider_name != envelope.key_provider);
        let decode = |text: &str, part: &str| {
            BASE64.decode(text).map_err(|e| EncryptionError::Envelope {
                what,
                detail: format!("its {part} is not base64: {e}"),
            })
        };
        let nonce_bytes = decode(&envelope.nonce, "nonce")?;
        if nonce_bytes.len() != 12 {
            return Err(EncryptionError::Envelope {
                what,
                detail: "its nonce is not 12 bytes long".into(),
            });
        }
        let nonce = Nonce::from_slice(&nonce_bytes);
        let ciphertext = decode(&envelope.ciphertext, "ciphertext")?;
        let aad = envelope.associated_data();
        let mut tried = Vec::new();
        for (name, provider_name, provider) in candidates {
            let key = match provider.decryption_key(&envelope.key_meta).await {
                Ok(key) => key,
                Err(e) => {
                    tried.push(format!("{name} ({provider_name}): {e}"));
                    continue;
                }
            };
            let Ok(cipher) = Aes256Gcm::new_from_slice(key.0.as_slice()) else {
                tried.push(format!(
                    "{name} ({provider_name}): a key of the wrong length"
                ));
                continue;
            };
            match cipher.decrypt(
                nonce,
                Payload {
                    msg: &ciphertext,
                    aad: &aad,
                },
            ) {
                Ok(plaintext) => {
                    if self.primary_name() != Some(name.as_str()) {
                        self.note_read_otherwise();
                    }
                    return Ok(plaintext);
                }
                Err(_) => tried.push(format!(
                    "{name} ({provider_name}): the authentication tag does not match"
                )),
            }
        }
        Err(EncryptionError::Decrypt {
            what,
            method: envelope.method,
            key_provider: envelope.key_provider,
            tried: format!("tried {}", tried.join("; ")),
        })
    }
}

/// The encryption of states and of plans, from one configuration (they share providers, so a
/// passphrase is stretched once per run).
#[derive(Debug, Clone)]
pub struct Encryptions {
    pub state: Arc<Encryption>,
    pub plan: Arc<Encryption>,
}

impl Default for Encryptions {
    fn default() -> Self {
        Self::none()
    }
}

/// Makes the providers this crate does not implement (`aws_kms`), by name and configuration.
pub type ExternalProviders<'a> =
    &'a dyn Fn(&str, &KeyProviderConfig) -> Result<Arc<dyn KeyProvider>, crate::BoxError>;

impl Encryptions {
    pub fn none() -> Self {
        Encryptions {
            state: Arc::new(Encryption::none(Target::State)),
            plan: Arc::new(Encryption::none(Target::Plan)),
        }
    }

    /// From an evaluated `encryption` block. Only the providers a target's methods use are
    /// made.
    pub fn new(
        config: &EncryptionConfig,
        external: ExternalProviders<'_>,
    ) -> Result<Self, EncryptionError> {
        let mut providers: IndexMap<String, Arc<dyn KeyProvider>> = IndexMap::new();
        let mut build = |target: Target| -> Result<Encryption, EncryptionError> {
            let what = target.name();
            let Some(chosen) = (match target {
                Target::State => &config.state,
                Target::Plan => &config.plan,
            }) else {
                return Ok(Encryption::none(target));
            };
            let mut method = |name: &str, role: &str| -> Result<Method, EncryptionError> {
                let Some(method) = config.methods.get(name) else {
                    return Err(EncryptionError::Config(format!(
                        "the {what} block's {role} is method.{name}, which is not declared"
                    )));
                };
                match method {
                    MethodConfig::Unencrypted => Ok(Method::Unencrypted),
                    MethodConfig::AesGcm { keys } => {
                        let provider = match providers.get(keys) {
                            Some(p) => p.clone(),
                            None => {
                                let Some(provider_config) = config.key_providers.get(keys) else {
                                    return Err(EncryptionError::Config(format!(
                                        "method.{name} takes its keys from key_provider.{keys}, which is not declared"
                                    )));
                                };
                                let provider: Arc<dyn KeyProvider> = match provider_config {
                                    KeyProviderConfig::Pbkdf2(p) => {
                                        Arc::new(Pbkdf2Provider::new(keys, p.clone())?)
                                    }
                                    other => external(keys, other).map_err(|e| {
                                        EncryptionError::Config(format!("key_provider.{keys}: {e}"))
                                    })?,
                                };
                                providers.insert(keys.clone(), provider.clone());
                                provider
                            }
                        };
                        Ok(Method::AesGcm {
                            name: name.to_owned(),
                            provider_name: keys.clone(),
                            provider,
                        })
                    }
                }
            };
            let primary = method(&chosen.method, "method")?;
            let fallback = match &chosen.fallback {
                Some(name) => Some(method(name, "fallback method")?),
                None => None,
            };
            if chosen.enforced && matches!(primary, Method::Unencrypted) {
                return Err(EncryptionError::Config(format!(
                    "the {what} block is enforced, so its method cannot be unencrypted"
                )));
            }
            Ok(Encryption {
                target,
                primary: Some(primary),
                fallback,
                read_otherwise: Default::default(),
            })
        };
        let state = build(Target::State)?;
        let plan = build(Target::Plan)?;
        Ok(Encryptions {
            state: Arc::new(state),
            plan: Arc::new(plan),
        })
    }
}

/// A key derived from a passphrase with PBKDF2-HMAC, cached for the run: a state read and
/// written again costs one derivation (writes reuse the salt of the state read with these
/// parameters; every envelope still has a nonce of its own).
pub struct Pbkdf2Provider {
    name: String,
    config: Pbkdf2Config,
    keys: KeyCache<Pbkdf2Meta>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pbkdf2Meta {
    salt: String,
    iterations: u32,
    hash_function: HashFunction,
    key_length: usize,
}

impl Pbkdf2Provider {
    pub fn new(name: &str, config: Pbkdf2Config) -> Result<Self, EncryptionError> {
        if config.passphrase.len() < MIN_PASSPHRASE_LEN {
            return Err(EncryptionError::Config(format!(
                "key_provider.{name}: the passphrase must be at least {MIN_PASSPHRASE_LEN} characters long"
            )));
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&config.iterations) {
            return Err(EncryptionError::Config(format!(
                "key_provider.{name}: iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
            )));
        }
        if !(MIN_SALT_LENGTH..=MAX_SALT_LENGTH).contains(&config.salt_length) {
            return Err(EncryptionError::Config(format!(
                "key_provider.{name}: salt_length must be between {MIN_SALT_LENGTH} and {MAX_SALT_LENGTH} bytes"
            )));
        }
        Ok(Self {
            name: name.to_owned(),
            config,
            keys: KeyCache::default(),
        })
    }

    fn derive(&self, meta: &Pbkdf2Meta) -> Result<DataKey, KeyError> {
        if meta.key_length != 32 {
            return Err(KeyError::new(format!(
                "the envelope asks for a key of {} bytes; AES-256 takes 32",
                meta.key_length
            )));
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&meta.iterations) {
            return Err(KeyError::new(format!(
                "the envelope asks for {} PBKDF2 iterations, outside the {MIN_ITERATIONS} to {MAX_ITERATIONS} any configuration may choose; it was altered",
                meta.iterations
            )));
        }
        let salt = BASE64
            .decode(&meta.salt)
            .map_err(|e| KeyError::new(format!("the envelope's salt is not base64: {e}")))?;
        if !(MIN_SALT_LENGTH..=MAX_SALT_LENGTH).contains(&salt.len()) {
            return Err(KeyError::new(format!(
                "the envelope's salt is {} bytes long, outside the {MIN_SALT_LENGTH} to {MAX_SALT_LENGTH} any configuration may choose; it was altered",
                salt.len()
            )));
        }
        let mut key = Zeroizing::new([0u8; 32]);
        let passphrase = self.config.passphrase.bytes();
        match meta.hash_function {
            HashFunction::Sha256 => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(
                passphrase,
                &salt,
                meta.iterations,
                key.as_mut_slice(),
            ),
            HashFunction::Sha512 => pbkdf2::pbkdf2_hmac::<sha2::Sha512>(
                passphrase,
                &salt,
                meta.iterations,
                key.as_mut_slice(),
            ),
        }
        Ok(DataKey(key))
    }

    /// Whether a key of these parameters may be written with: this configuration's own.
    fn is_current(&self, meta: &Pbkdf2Meta) -> bool {
        meta.iterations == self.config.iterations
            && meta.hash_function == self.config.hash_function
            && BASE64
                .decode(&meta.salt)
                .is_ok_and(|s| s.len() == self.config.salt_length)
    }
}

#[async_trait::async_trait]
impl KeyProvider for Pbkdf2Provider {
    async fn encryption_key(&self) -> Result<(DataKey, serde_json::Value), KeyError> {
        self.keys
            .encryption_key(async || {
                let mut salt = vec![0u8; self.config.salt_length];
                OsRng.fill_bytes(&mut salt);
                let meta = Pbkdf2Meta {
                    salt: BASE64.encode(&salt),
                    iterations: self.config.iterations,
                    hash_function: self.config.hash_function,
                    key_length: 32,
                };
                // Kept as found too: this run reads what it wrote without deriving again.
                let key = self
                    .keys
                    .key(meta.clone(), async || self.derive(&meta))
                    .await?;
                Ok((key, serde_json::to_value(&meta).unwrap_or_default()))
            })
            .await
    }

    async fn decryption_key(&self, meta: &serde_json::Value) -> Result<DataKey, KeyError> {
        let meta: Pbkdf2Meta = serde_json::from_value(meta.clone()).map_err(|e| {
            KeyError::new(format!(
                "the envelope was not written by a pbkdf2 key provider ({e})"
            ))
        })?;
        let writes_with = self
            .is_current(&meta)
            .then(|| serde_json::to_value(&meta).unwrap_or_default());
        self.keys
            .decryption_key(meta.clone(), writes_with, async || self.derive(&meta))
            .await
    }
}

impl std::fmt::Debug for Pbkdf2Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pbkdf2Provider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pbkdf2(passphrase: &str) -> KeyProviderConfig {
        KeyProviderConfig::Pbkdf2(Pbkdf2Config {
            iterations: MIN_ITERATIONS,
            ..Pbkdf2Config::new(Passphrase::new(passphrase.to_owned()))
        })
    }

    fn no_external(
        _: &str,
        _: &KeyProviderConfig,
    ) -> Result<Arc<dyn KeyProvider>, crate::BoxError> {
        Err("not in this test".into())
    }

    fn config(
        providers: &[(&str, KeyProviderConfig)],
        methods: &[(&str, MethodConfig)],
        method: &str,
        fallback: Option<&str>,
    ) -> Encryptions {
        let config = EncryptionConfig {
            key_providers: providers
                .iter()
                .map(|(n, c)| ((*n).to_owned(), c.clone()))
                .collect(),
            methods: methods
                .iter()
                .map(|(n, c)| ((*n).to_owned(), c.clone()))
                .collect(),
            state: Some(TargetConfig {
                method: method.to_owned(),
                fallback: fallback.map(str::to_owned),
                enforced: false,
            }),
            plan: None,
        };
        Encryptions::new(&config, &no_external).unwrap()
    }

    fn aes(keys: &str) -> MethodConfig {
        MethodConfig::AesGcm {
            keys: keys.to_owned(),
        }
    }

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        futures::executor::block_on(f)
    }

    #[test]
    fn seals_opens_rotates_and_refuses_what_it_cannot_read() {
        let old = config(
            &[("pbkdf2.old", pbkdf2("an old passphrase of length"))],
            &[("aes_gcm.old", aes("pbkdf2.old"))],
            "aes_gcm.old",
            None,
        );
        let secret = b"{\"format_version\": 1, \"secret\": \"hunter2-hunter2\"}".to_vec();
        let sealed = run(old.state.seal(secret.clone(), None)).unwrap();
        assert!(is_envelope(&sealed));
        assert!(!String::from_utf8_lossy(&sealed).contains("hunter2"));
        assert!(!String::from_utf8_lossy(&sealed).contains("old passphrase"));
        assert_eq!(run(old.state.open(&sealed)).unwrap(), secret);

        // Rotation: the new key writes, the old one still reads.
        let rotated = config(
            &[
                ("pbkdf2.old", pbkdf2("an old passphrase of length")),
                ("pbkdf2.new", pbkdf2("a new passphrase, longer still")),
            ],
            &[
                ("aes_gcm.old", aes("pbkdf2.old")),
                ("aes_gcm.new", aes("pbkdf2.new")),
            ],
            "aes_gcm.new",
            Some("aes_gcm.old"),
        );
        assert_eq!(run(rotated.state.open(&sealed)).unwrap(), secret);
        let resealed = run(rotated.state.seal(secret.clone(), None)).unwrap();
        let new_only = config(
            &[("pbkdf2.new", pbkdf2("a new passphrase, longer still"))],
            &[("aes_gcm.new", aes("pbkdf2.new"))],
            "aes_gcm.new",
            None,
        );
        assert_eq!(run(new_only.state.open(&resealed)).unwrap(), secret);
        let Err(EncryptionError::Decrypt { tried, .. }) = run(new_only.state.open(&sealed)) else {
            panic!("the old key's state must not open with the new key alone")
        };
        assert!(tried.contains("authentication tag"), "{tried}");

        // No configuration: an envelope is an error, never an empty state.
        assert!(matches!(
            run(Encryptions::none().state.open(&sealed)),
            Err(EncryptionError::NotConfigured { .. })
        ));
        // Plaintext needs an unencrypted method to be read.
        assert!(matches!(
            run(old.state.open(&secret)),
            Err(EncryptionError::Unencrypted { .. })
        ));
        let migrating = config(
            &[("pbkdf2.old", pbkdf2("an old passphrase of length"))],
            &[
                ("aes_gcm.old", aes("pbkdf2.old")),
                ("unencrypted.migrate", MethodConfig::Unencrypted),
            ],
            "aes_gcm.old",
            Some("unencrypted.migrate"),
        );
        assert_eq!(run(migrating.state.open(&secret)).unwrap(), secret);

        // The header is authenticated: an altered one does not decrypt.
        let mut envelope: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
        envelope["method"] = "aes_gcm.other".into();
        let altered = serde_json::to_vec(&envelope).unwrap();
        assert!(run(old.state.open(&altered)).is_err());
        // Nor does a state's envelope pass for a plan.
        let plans = Encryptions::new(
            &EncryptionConfig {
                key_providers: [(
                    "pbkdf2.old".to_owned(),
                    pbkdf2("an old passphrase of length"),
                )]
                .into_iter()
                .collect(),
                methods: [("aes_gcm.old".to_owned(), aes("pbkdf2.old"))]
                    .into_iter()
                    .collect(),
                state: None,
                plan: Some(TargetConfig {
                    method: "aes_gcm.old".into(),
                    fallback: None,
                    enforced: true,
                }),
            },
            &no_external,
        )
        .unwrap();
        assert!(matches!(
            run(plans.plan.open(&sealed)),
            Err(EncryptionError::WrongPurpose { .. })
        ));
    }

    #[test]
    fn an_envelope_naming_a_cost_outside_the_bounds_is_refused_before_deriving() {
        let encryptions = config(
            &[("pbkdf2.k", pbkdf2("a passphrase of some length"))],
            &[("aes_gcm.m", aes("pbkdf2.k"))],
            "aes_gcm.m",
            None,
        );
        let sealed = run(encryptions.state.seal(b"{}".to_vec(), None)).unwrap();
        let envelope: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
        let altered = |field: &str, value: serde_json::Value| {
            let mut envelope = envelope.clone();
            envelope["key_meta"][field] = value;
            serde_json::to_vec(&envelope).unwrap()
        };
        for (bytes, says) in [
            (
                altered("iterations", u32::MAX.into()),
                "4294967295 PBKDF2 iterations",
            ),
            (altered("iterations", 1.into()), "1 PBKDF2 iterations"),
            (
                altered("salt", BASE64.encode(vec![0u8; 1 << 20]).into()),
                "salt is 1048576 bytes long",
            ),
        ] {
            let started = std::time::Instant::now();
            let err = run(encryptions.state.open(&bytes)).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert!(started.elapsed() < std::time::Duration::from_secs(1));
        }
        // Within the bounds, an altered envelope costs one derivation at the most a
        // configuration may choose, then fails on the tag: under the second the issue sets
        // (about half a second; the derivation is built optimised in every profile). It is
        // measured as the CPU time of this thread, which derives, where Linux reports it: wall
        // time would count whatever else the machine runs meanwhile, so where only wall time
        // is known the bound leaves room for a loaded run.
        let started = thread_cpu_time();
        let wall = std::time::Instant::now();
        assert!(
            run(encryptions
                .state
                .open(&altered("iterations", MAX_ITERATIONS.into())))
            .is_err()
        );
        match (started, thread_cpu_time()) {
            (Some(started), Some(now)) => {
                let spent = now - started;
                assert!(spent < std::time::Duration::from_secs(1), "{spent:?}");
            }
            _ => assert!(
                wall.elapsed() < std::time::Duration::from_secs(5),
                "{:?}",
                wall.elapsed()
            ),
        }
    }

    /// The CPU time this thread has used, from Linux's scheduler statistics (nanoseconds
    /// on a CPU, the first field); `None` where the system does not report it.
    fn thread_cpu_time() -> Option<std::time::Duration> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let nanos = text.split_whitespace().next()?.parse().ok()?;
        Some(std::time::Duration::from_nanos(nanos))
    }

    #[test]
    fn a_key_cache_finds_each_key_once_and_writes_with_the_key_read_with() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let counted = |byte: u8| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            DataKey::from_slice(&[byte; 32])
        };
        let made = serde_json::json!("made");

        let other = KeyCache::<u8>::default();
        run(other.decryption_key(1, None, async || counted(1))).unwrap();
        run(other.decryption_key(1, None, async || counted(1))).unwrap();
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Read with a key this configuration does not write with: writes make their own.
        let (_, meta) =
            run(other.encryption_key(async || Ok((counted(9)?, made.clone())))).unwrap();
        assert_eq!(meta, made);
        run(other.encryption_key(async || Ok((counted(9)?, made.clone())))).unwrap();
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);

        let own = KeyCache::<u8>::default();
        let read_with = serde_json::json!("read with");
        run(own.decryption_key(2, Some(read_with.clone()), async || counted(2))).unwrap();
        let (_, meta) = run(own.encryption_key(async || Ok((counted(9)?, made.clone())))).unwrap();
        assert_eq!(meta, read_with);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[test]
    fn weak_settings_are_refused() {
        let config = EncryptionConfig {
            key_providers: [("pbkdf2.short".to_owned(), pbkdf2("too short"))]
                .into_iter()
                .collect(),
            methods: [("aes_gcm.m".to_owned(), aes("pbkdf2.short"))]
                .into_iter()
                .collect(),
            state: Some(TargetConfig {
                method: "aes_gcm.m".into(),
                fallback: None,
                enforced: false,
            }),
            plan: None,
        };
        let Err(EncryptionError::Config(message)) = Encryptions::new(&config, &no_external) else {
            panic!("a short passphrase must be refused")
        };
        assert!(message.contains("at least 16"), "{message}");
        assert!(!message.contains("too short"), "{message}");
    }
}
