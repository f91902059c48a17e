//! Private keys as hashicorp/tls makes, writes and reads them: RSA, ECDSA on the four NIST
//! curves, Ed25519; PEM in the forms Go's `crypto/x509` writes, OpenSSH as `x/crypto/ssh`
//! writes it, and the signature algorithm Go's `x509.CreateCertificate` picks per key.

use der::asn1::OctetString;
use der::{Decode, Encode};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use sha2::{Digest, Sha256, Sha384, Sha512};
use signature::Signer;
use signature::hazmat::PrehashSigner;
use spki::{AlgorithmIdentifierOwned, ObjectIdentifier, SubjectPublicKeyInfoOwned};

/// A private key of one of the algorithms the provider makes.
#[derive(Clone)]
pub(crate) enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    P224(p224::SecretKey),
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    P521(p521::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
}

/// The curves `ecdsa_curve` accepts, in the provider's order.
pub(crate) const CURVES: [&str; 4] = ["P224", "P256", "P384", "P521"];
pub(crate) const ALGORITHMS: [&str; 3] = ["RSA", "ECDSA", "ED25519"];

/// A new key from the plan's generator (`rng` is seeded by the plan, so apply makes the same).
pub(crate) fn generate(
    algorithm: &str,
    rsa_bits: i64,
    curve: &str,
    rng: &mut rand_chacha_06::ChaCha20Rng,
) -> Result<Key, String> {
    Ok(match algorithm {
        "RSA" => {
            // Go's crypto/rsa refuses keys under 1024 bits; past 16384 a plan would not end.
            if !(1024..=16384).contains(&rsa_bits) {
                return Err(format!(
                    "crypto/rsa: {rsa_bits}-bit keys are not supported: rsa_bits must be from 1024 to 16384"
                ));
            }
            let key = rsa::RsaPrivateKey::new(rng, rsa_bits as usize).map_err(|e| e.to_string())?;
            Key::Rsa(Box::new(key))
        }
        "ECDSA" => match curve {
            "P224" => Key::P224(p224::SecretKey::random(rng)),
            "P256" => Key::P256(p256::SecretKey::random(rng)),
            "P384" => Key::P384(p384::SecretKey::random(rng)),
            "P521" => Key::P521(p521::SecretKey::random(rng)),
            _ => {
                return Err(
                    "invalid ECDSA curve; supported values are: [P224 P256 P384 P521]".into(),
                );
            }
        },
        "ED25519" => Key::Ed25519(ed25519_dalek::SigningKey::generate(rng)),
        other => return Err(format!("Key Algorithm \"{other}\" is not supported")),
    })
}

/// The first PEM block of `text`: its label and the block's text.
pub(crate) fn first_pem_block(text: &str) -> Option<(&str, &str)> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label_end = rest.find("-----")?;
    let label = &rest[..label_end];
    let end_marker = format!("-----END {label}-----");
    let end = text[start..].find(&end_marker)? + start + end_marker.len();
    Some((label, &text[start..end]))
}

/// A private key in PEM (PKCS#1, SEC 1 or PKCS#8; the first block only), with the
/// provider's messages for what it cannot read.
pub(crate) fn parse_pem(text: &str) -> Result<Key, String> {
    let Some((label, block)) = first_pem_block(text) else {
        return Err(format!(
            "failed to decode PEM block: decoded bytes 0, undecoded {}",
            text.len()
        ));
    };
    let failed = |e: &dyn std::fmt::Display| {
        format!("failed to parse private key given PEM preamble '{label}': {e}")
    };
    match label {
        "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_pem(block)
            .map(|k| Key::Rsa(Box::new(k)))
            .map_err(|e| failed(&e)),
        "EC PRIVATE KEY" => p256::SecretKey::from_sec1_pem(block)
            .map(Key::P256)
            .or_else(|_| p384::SecretKey::from_sec1_pem(block).map(Key::P384))
            .or_else(|_| p521::SecretKey::from_sec1_pem(block).map(Key::P521))
            .or_else(|_| p224::SecretKey::from_sec1_pem(block).map(Key::P224))
            .map_err(|e| failed(&e)),
        "PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs8_pem(block)
            .map(|k| Key::Rsa(Box::new(k)))
            .or_else(|_| p256::SecretKey::from_pkcs8_pem(block).map(Key::P256))
            .or_else(|_| p384::SecretKey::from_pkcs8_pem(block).map(Key::P384))
            .or_else(|_| p521::SecretKey::from_pkcs8_pem(block).map(Key::P521))
            .or_else(|_| p224::SecretKey::from_pkcs8_pem(block).map(Key::P224))
            .or_else(|_| ed25519_dalek::SigningKey::from_pkcs8_pem(block).map(Key::Ed25519))
            .map_err(|e| failed(&e)),
        "PUBLIC KEY" | "CERTIFICATE" | "CERTIFICATE REQUEST" => Err(format!(
            "unable to determine parser for PEM preamble: {label}"
        )),
        other => Err(format!("unsupported PEM preamble/type: {other}")),
    }
}

/// A private key in OpenSSH's format (or, as `ssh.ParseRawPrivateKey` also reads them, PEM).
pub(crate) fn parse_openssh(text: &str) -> Result<Key, String> {
    if first_pem_block(text).is_some_and(|(label, _)| label != "OPENSSH PRIVATE KEY") {
        return parse_pem(text).map_err(|e| format!("failed to parse openssh private key: {e}"));
    }
    let key = ssh_key::PrivateKey::from_openssh(text)
        .map_err(|e| format!("failed to parse openssh private key: ssh: {e}"))?;
    use ssh_key::private::KeypairData;
    let unsupported =
        || "failed to parse openssh private key: ssh: unsupported key type".to_owned();
    Ok(match key.key_data() {
        KeypairData::Rsa(pair) => Key::Rsa(Box::new(
            rsa::RsaPrivateKey::try_from(pair).map_err(|e| e.to_string())?,
        )),
        KeypairData::Ecdsa(ssh_key::private::EcdsaKeypair::NistP256 { private, .. }) => {
            Key::P256(p256::SecretKey::from_slice(private.as_slice()).map_err(|e| e.to_string())?)
        }
        KeypairData::Ecdsa(ssh_key::private::EcdsaKeypair::NistP384 { private, .. }) => {
            Key::P384(p384::SecretKey::from_slice(private.as_slice()).map_err(|e| e.to_string())?)
        }
        KeypairData::Ecdsa(ssh_key::private::EcdsaKeypair::NistP521 { private, .. }) => {
            Key::P521(p521::SecretKey::from_slice(private.as_slice()).map_err(|e| e.to_string())?)
        }
        KeypairData::Ed25519(pair) => Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(
            &pair.private.to_bytes(),
        )),
        _ => return Err(unsupported()),
    })
}

fn pem(label: &'static str, der: &[u8]) -> Result<String, String> {
    der::pem::encode_string(label, LineEnding::LF, der).map_err(|e| e.to_string())
}

impl Key {
    /// The provider's name of the key's algorithm.
    pub(crate) fn algorithm(&self) -> &'static str {
        match self {
            Key::Rsa(_) => "RSA",
            Key::Ed25519(_) => "ED25519",
            _ => "ECDSA",
        }
    }

    /// `private_key_pem`: PKCS#1 for RSA, SEC 1 for ECDSA, PKCS#8 for Ed25519 (as Go writes).
    pub(crate) fn private_pem(&self) -> Result<String, String> {
        let text = match self {
            Key::Rsa(k) => k.to_pkcs1_pem(LineEnding::LF).map_err(|e| e.to_string())?,
            Key::P224(k) => k.to_sec1_pem(LineEnding::LF).map_err(|e| e.to_string())?,
            Key::P256(k) => k.to_sec1_pem(LineEnding::LF).map_err(|e| e.to_string())?,
            Key::P384(k) => k.to_sec1_pem(LineEnding::LF).map_err(|e| e.to_string())?,
            Key::P521(k) => k.to_sec1_pem(LineEnding::LF).map_err(|e| e.to_string())?,
            Key::Ed25519(_) => return self.pkcs8_pem(),
        };
        Ok(text.to_string())
    }

    /// `private_key_pem_pkcs8`. Ed25519's is version 1, without the public key, as Go's.
    pub(crate) fn pkcs8_pem(&self) -> Result<String, String> {
        let text = match self {
            Key::Rsa(k) => k.to_pkcs8_pem(LineEnding::LF),
            Key::P224(k) => k.to_pkcs8_pem(LineEnding::LF),
            Key::P256(k) => k.to_pkcs8_pem(LineEnding::LF),
            Key::P384(k) => k.to_pkcs8_pem(LineEnding::LF),
            Key::P521(k) => k.to_pkcs8_pem(LineEnding::LF),
            Key::Ed25519(k) => ed25519_dalek::pkcs8::KeypairBytes {
                secret_key: k.to_bytes(),
                public_key: None,
            }
            .to_pkcs8_pem(LineEnding::LF),
        };
        text.map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    /// The SubjectPublicKeyInfo, DER.
    pub(crate) fn public_der(&self) -> Result<Vec<u8>, String> {
        let doc = match self {
            Key::Rsa(k) => k.to_public_key().to_public_key_der(),
            Key::P224(k) => k.public_key().to_public_key_der(),
            Key::P256(k) => k.public_key().to_public_key_der(),
            Key::P384(k) => k.public_key().to_public_key_der(),
            Key::P521(k) => k.public_key().to_public_key_der(),
            Key::Ed25519(k) => k.verifying_key().to_public_key_der(),
        };
        doc.map(|d| d.into_vec()).map_err(|e| e.to_string())
    }

    pub(crate) fn spki(&self) -> Result<SubjectPublicKeyInfoOwned, String> {
        SubjectPublicKeyInfoOwned::from_der(&self.public_der()?).map_err(|e| e.to_string())
    }

    /// The key's OpenSSH form; None for P-224, which OpenSSH does not have.
    fn ssh_keypair(&self) -> Option<ssh_key::private::KeypairData> {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        use ssh_key::private::{EcdsaKeypair, Ed25519Keypair, KeypairData, RsaKeypair};
        Some(match self {
            Key::Rsa(k) => KeypairData::Rsa(RsaKeypair::try_from(k.as_ref()).ok()?),
            Key::P224(_) => return None,
            Key::P256(k) => KeypairData::Ecdsa(EcdsaKeypair::NistP256 {
                public: k.public_key().to_encoded_point(false),
                private: k.clone().into(),
            }),
            Key::P384(k) => KeypairData::Ecdsa(EcdsaKeypair::NistP384 {
                public: k.public_key().to_encoded_point(false),
                private: k.clone().into(),
            }),
            Key::P521(k) => KeypairData::Ecdsa(EcdsaKeypair::NistP521 {
                public: k.public_key().to_encoded_point(false),
                private: k.clone().into(),
            }),
            Key::Ed25519(k) => KeypairData::Ed25519(Ed25519Keypair::from(k.clone())),
        })
    }

    /// `private_key_openssh`: "" for P-224, as the provider writes it.
    pub(crate) fn private_openssh(&self) -> Result<String, String> {
        let Some(pair) = self.ssh_keypair() else {
            return Ok(String::new());
        };
        let key = ssh_key::PrivateKey::new(pair, "").map_err(|e| e.to_string())?;
        key.to_openssh(ssh_key::LineEnding::LF)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    /// What the provider computes of the public key: `public_key_pem`, `public_key_openssh`,
    /// the two fingerprints, and `id` (SHA-1 of the SubjectPublicKeyInfo).
    pub(crate) fn public_attributes(&self) -> Result<Vec<(&'static str, String)>, String> {
        let der = self.public_der()?;
        let (openssh, md5, sha256) = match self.ssh_keypair() {
            Some(pair) => {
                let public = ssh_key::PublicKey::from(
                    ssh_key::public::KeyData::try_from(&pair).map_err(|e| e.to_string())?,
                );
                let wire = public.to_bytes().map_err(|e| e.to_string())?;
                let md5 = <md5::Md5 as md5::Digest>::digest(&wire)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":");
                let openssh = public.to_openssh().map_err(|e| e.to_string())?;
                let sha256 = public.fingerprint(ssh_key::HashAlg::Sha256).to_string();
                (format!("{openssh}\n"), md5, sha256)
            }
            None => (String::new(), String::new(), String::new()),
        };
        Ok(vec![
            ("public_key_pem", pem("PUBLIC KEY", &der)?),
            ("public_key_openssh", openssh),
            ("public_key_fingerprint_md5", md5),
            ("public_key_fingerprint_sha256", sha256),
            ("id", hash_for_state(&der)),
        ])
    }

    /// The algorithm Go's `x509.CreateCertificate` signs with for this key, and the signature
    /// of `message`. Every one is deterministic (PKCS#1 v1.5, RFC 6979, Ed25519).
    pub(crate) fn sign(
        &self,
        message: &[u8],
    ) -> Result<(AlgorithmIdentifierOwned, Vec<u8>), String> {
        const RSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
        const ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
        const ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
        const ECDSA_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.4");
        const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
        let algorithm = |oid, parameters| AlgorithmIdentifierOwned { oid, parameters };
        let failed = |e: signature::Error| e.to_string();
        Ok(match self {
            Key::Rsa(k) => {
                let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(k.as_ref().clone());
                let signature: rsa::pkcs1v15::Signature =
                    signer.try_sign(message).map_err(failed)?;
                (
                    algorithm(RSA_SHA256, Some(der::Any::null())),
                    signature::SignatureEncoding::to_vec(&signature),
                )
            }
            Key::P224(k) => {
                let signer = p224::ecdsa::SigningKey::from(k);
                let signature: p224::ecdsa::Signature = signer
                    .sign_prehash(&Sha256::digest(message))
                    .map_err(failed)?;
                (
                    algorithm(ECDSA_SHA256, None),
                    signature.to_der().as_bytes().to_vec(),
                )
            }
            Key::P256(k) => {
                let signer = p256::ecdsa::SigningKey::from(k);
                let signature: p256::ecdsa::Signature = signer
                    .sign_prehash(&Sha256::digest(message))
                    .map_err(failed)?;
                (
                    algorithm(ECDSA_SHA256, None),
                    signature.to_der().as_bytes().to_vec(),
                )
            }
            Key::P384(k) => {
                let signer = p384::ecdsa::SigningKey::from(k);
                let signature: p384::ecdsa::Signature = signer
                    .sign_prehash(&Sha384::digest(message))
                    .map_err(failed)?;
                (
                    algorithm(ECDSA_SHA384, None),
                    signature.to_der().as_bytes().to_vec(),
                )
            }
            Key::P521(k) => {
                let signer = p521::ecdsa::SigningKey::from_bytes(&k.to_bytes()).map_err(failed)?;
                let signature: p521::ecdsa::Signature = signer
                    .sign_prehash(&Sha512::digest(message))
                    .map_err(failed)?;
                (
                    algorithm(ECDSA_SHA512, None),
                    signature.to_der().as_bytes().to_vec(),
                )
            }
            Key::Ed25519(k) => (
                algorithm(ED25519, None),
                k.sign(message).to_bytes().to_vec(),
            ),
        })
    }
}

/// The provider's `hashForState`: SHA-1 hex of the bytes with ASCII white space trimmed from
/// both ends (as Go's `strings.TrimSpace`, which it also runs on DER).
pub(crate) fn hash_for_state(bytes: &[u8]) -> String {
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        return String::new();
    }
    <sha1::Sha1 as sha1::Digest>::digest(trimmed)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The subject key identifier the provider sets for a public key: SHA-1 of the PKCS#1 public
/// key (RSA) or of the uncompressed point (ECDSA), which are the SubjectPublicKeyInfo's key
/// bits, or of the key as a DER OCTET STRING (Ed25519).
pub(crate) fn subject_key_id(spki: &SubjectPublicKeyInfoOwned) -> Result<Vec<u8>, String> {
    const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
    let bits = spki.subject_public_key.raw_bytes();
    let bytes = if spki.algorithm.oid == ED25519 {
        OctetString::new(bits.to_vec())
            .and_then(|o| o.to_der())
            .map_err(|e| e.to_string())?
    } else {
        bits.to_vec()
    };
    Ok(<sha1::Sha1 as sha1::Digest>::digest(&bytes).to_vec())
}
