//! The `aws_kms` key provider: envelope encryption with AWS KMS. A run asks GenerateDataKey
//! for one AES-256 data key, encrypts with its plaintext and keeps only its ciphertext blob (in
//! the envelope); reading asks Decrypt for the blob's plaintext. A state read and written again
//! costs one call: writes use the data key it was read with, when the KMS key is the one
//! configured.
//!
//! **Invariant:** a data key's plaintext lives only in memory, zeroed when dropped; the
//! envelope holds the blob the KMS encrypted.

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use gpustack_state::encryption::{AwsKmsConfig, DataKey, KeyCache, KeyError, KeyProvider};
use serde::{Deserialize, Serialize};

pub struct KmsProvider {
    config: AwsKmsConfig,
    client: tokio::sync::OnceCell<aws_sdk_kms::Client>,
    /// The data key writes use, and the data keys decrypted, by their ciphertext blob.
    keys: KeyCache<String>,
}

/// What the envelope keeps: the KMS key and the data key as the KMS encrypted it.
#[derive(Debug, Serialize, Deserialize)]
struct KmsMeta {
    kms_key_id: String,
    ciphertext_blob: String,
}

/// Why an `aws_kms` key provider's configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KmsConfigError {
    #[error("kms_key_id is empty")]
    NoKeyId,
    #[error(
        "key_spec {spec:?} is not one the KMS knows ({})",
        DataKeySpec::values().join(", ")
    )]
    UnknownKeySpec { spec: String },
    #[error("key_spec {spec:?} does not make an AES-256 key; use \"AES_256\"")]
    NotAes256 { spec: String },
}

impl KmsProvider {
    pub fn new(config: AwsKmsConfig) -> Result<Self, KmsConfigError> {
        if config.kms_key_id.is_empty() {
            return Err(KmsConfigError::NoKeyId);
        }
        if DataKeySpec::values().iter().all(|v| *v != config.key_spec) {
            return Err(KmsConfigError::UnknownKeySpec {
                spec: config.key_spec,
            });
        }
        if config.key_spec != "AES_256" {
            return Err(KmsConfigError::NotAes256 {
                spec: config.key_spec,
            });
        }
        Ok(Self {
            config,
            client: tokio::sync::OnceCell::new(),
            keys: KeyCache::default(),
        })
    }

    async fn client(&self) -> &aws_sdk_kms::Client {
        self.client
            .get_or_init(|| async {
                let settings = gpustack_connect::aws::AwsSettings {
                    region: self.config.region.clone(),
                    profile: self.config.profile.clone(),
                    endpoint: self.config.endpoint.clone(),
                };
                let shared = gpustack_connect::aws::loader(&settings).load().await;
                aws_sdk_kms::Client::new(&shared)
            })
            .await
    }
}

/// A data key as the KMS answer carries it (base64) is a secret of the run, scrubbed from
/// whatever it prints (the SDK redacts it from its own logs already).
fn hide(plaintext: &[u8]) {
    gpustack_protocol::secrets::remember([&BASE64.encode(plaintext)]);
}

fn kms_error(call: &str, error: impl std::error::Error) -> KeyError {
    KeyError::new(format!(
        "{call} failed: {}",
        aws_sdk_kms::error::DisplayErrorContext(error)
    ))
}

#[async_trait::async_trait]
impl KeyProvider for KmsProvider {
    async fn encryption_key(&self) -> Result<(DataKey, serde_json::Value), KeyError> {
        self.keys
            .encryption_key(async || {
                let output = self
                    .client()
                    .await
                    .generate_data_key()
                    .key_id(&self.config.kms_key_id)
                    .key_spec(DataKeySpec::from(self.config.key_spec.as_str()))
                    .send()
                    .await
                    .map_err(|e| kms_error("GenerateDataKey", e))?;
                let (Some(plaintext), Some(blob)) = (output.plaintext(), output.ciphertext_blob())
                else {
                    return Err(KeyError::new("GenerateDataKey answered without a data key"));
                };
                hide(plaintext.as_ref());
                let key = DataKey::from_slice(plaintext.as_ref())?;
                let meta = serde_json::to_value(KmsMeta {
                    kms_key_id: self.config.kms_key_id.clone(),
                    ciphertext_blob: BASE64.encode(blob.as_ref()),
                })
                .unwrap_or_default();
                Ok((key, meta))
            })
            .await
    }

    async fn decryption_key(&self, meta: &serde_json::Value) -> Result<DataKey, KeyError> {
        let meta: KmsMeta = serde_json::from_value(meta.clone()).map_err(|e| {
            KeyError::new(format!(
                "the envelope was not written by an aws_kms key provider ({e})"
            ))
        })?;
        let writes_with = (meta.kms_key_id == self.config.kms_key_id)
            .then(|| serde_json::to_value(&meta).unwrap_or_default());
        self.keys
            .decryption_key(meta.ciphertext_blob.clone(), writes_with, async || {
                let blob = BASE64.decode(&meta.ciphertext_blob).map_err(|e| {
                    KeyError::new(format!("the envelope's data key is not base64: {e}"))
                })?;
                let output = self
                    .client()
                    .await
                    .decrypt()
                    .key_id(&meta.kms_key_id)
                    .ciphertext_blob(Blob::new(blob))
                    .send()
                    .await
                    .map_err(|e| kms_error("Decrypt", e))?;
                let Some(plaintext) = output.plaintext() else {
                    return Err(KeyError::new("Decrypt answered without the data key"));
                };
                hide(plaintext.as_ref());
                DataKey::from_slice(plaintext.as_ref())
            })
            .await
    }
}
