//! Certificates and certificate requests as hashicorp/tls makes them with Go's
//! `crypto/x509`: the template the provider fills, the extensions Go writes from it (in Go's
//! order, with Go's critical flags), and what `data "tls_certificate"` reports of one.

use super::keys::{Key, hash_for_state};
use der::asn1::{Any, BitString, Ia5String, OctetString, SetOfVec};
use der::{Decode, Encode, Tag};
use spki::{ObjectIdentifier, SubjectPublicKeyInfoOwned};
use x509_cert::attr::{Attribute, AttributeTypeAndValue};
use x509_cert::certificate::{Certificate, TbsCertificate, Version};
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::name::{Name, RdnSequence, RelativeDistinguishedName};
use x509_cert::request::{CertReq, CertReqInfo};
use x509_cert::serial_number::SerialNumber;
use x509_cert::time::{Time, Validity};

const EXTENSION_REQUEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.14");
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
const SUBJECT_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.14");
const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");
const EMAIL: &str = "1.2.840.113549.1.9.1";

/// `subject {}` as Go's `pkix.Name`: attribute, OID and its values, in the order Go's
/// `ToRDNSequence` writes them.
const SUBJECT_FIELDS: [(&str, &str); 9] = [
    ("country", "2.5.4.6"),
    ("province", "2.5.4.8"),
    ("locality", "2.5.4.7"),
    ("street_address", "2.5.4.9"),
    ("postal_code", "2.5.4.17"),
    ("organization", "2.5.4.10"),
    ("organizational_unit", "2.5.4.11"),
    ("common_name", "2.5.4.3"),
    ("serial_number", "2.5.4.5"),
];

/// The attributes of the `subject {}` block, in the provider's schema order.
pub(crate) const SUBJECT_ATTRIBUTES: [&str; 10] = [
    "organization",
    "common_name",
    "organizational_unit",
    "street_address",
    "locality",
    "province",
    "country",
    "postal_code",
    "serial_number",
    "email_address",
];

/// `allowed_uses`: the key usage bits (Go's `x509.KeyUsage`) and extended key usages.
pub(crate) const KEY_USAGES: [(&str, u16); 9] = [
    ("digital_signature", 1 << 0),
    ("content_commitment", 1 << 1),
    ("key_encipherment", 1 << 2),
    ("data_encipherment", 1 << 3),
    ("key_agreement", 1 << 4),
    ("cert_signing", 1 << 5),
    ("crl_signing", 1 << 6),
    ("encipher_only", 1 << 7),
    ("decipher_only", 1 << 8),
];
pub(crate) const EXT_KEY_USAGES: [(&str, &str); 14] = [
    ("any_extended", "2.5.29.37.0"),
    ("server_auth", "1.3.6.1.5.5.7.3.1"),
    ("client_auth", "1.3.6.1.5.5.7.3.2"),
    ("code_signing", "1.3.6.1.5.5.7.3.3"),
    ("email_protection", "1.3.6.1.5.5.7.3.4"),
    ("ipsec_end_system", "1.3.6.1.5.5.7.3.5"),
    ("ipsec_tunnel", "1.3.6.1.5.5.7.3.6"),
    ("ipsec_user", "1.3.6.1.5.5.7.3.7"),
    ("timestamping", "1.3.6.1.5.5.7.3.8"),
    ("ocsp_signing", "1.3.6.1.5.5.7.3.9"),
    ("microsoft_server_gated_crypto", "1.3.6.1.4.1.311.10.3.3"),
    ("netscape_server_gated_crypto", "2.16.840.1.113730.4.1"),
    (
        "microsoft_commercial_code_signing",
        "1.3.6.1.4.1.311.2.1.22",
    ),
    ("microsoft_kernel_code_signing", "1.3.6.1.4.1.311.61.1.1"),
];

fn oid(text: &str) -> ObjectIdentifier {
    ObjectIdentifier::new_unwrap(text)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Go's `asn1` choice for a string: PrintableString when every character is printable.
fn is_printable(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&c))
}

fn string_value(s: &str) -> Result<Any, String> {
    let tag = if is_printable(s) {
        Tag::PrintableString
    } else {
        Tag::Utf8String
    };
    Any::new(tag, s.as_bytes()).map_err(err)
}

/// The subject's distinguished name from `subject {}` (field name → values).
pub(crate) fn subject_name(fields: &[(&str, Vec<String>)]) -> Result<Name, String> {
    let values = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut rdns = Vec::new();
    for (field, id) in SUBJECT_FIELDS {
        let values = values(field);
        if values.is_empty() {
            continue;
        }
        let mut set = Vec::new();
        for v in values {
            set.push(AttributeTypeAndValue {
                oid: oid(id),
                value: string_value(&v)?,
            });
        }
        rdns.push(RelativeDistinguishedName(
            SetOfVec::try_from(set).map_err(err)?,
        ));
    }
    if let Some(email) = values("email_address").first() {
        let ia5 = Any::new(Tag::Ia5String, email.as_bytes()).map_err(err)?;
        rdns.push(RelativeDistinguishedName(
            SetOfVec::try_from(vec![AttributeTypeAndValue {
                oid: oid(EMAIL),
                value: ia5,
            }])
            .map_err(err)?,
        ));
    }
    Ok(RdnSequence(rdns))
}

/// The alternative names of a certificate or request.
#[derive(Default, Clone)]
pub(crate) struct AltNames {
    pub(crate) dns: Vec<String>,
    pub(crate) ips: Vec<std::net::IpAddr>,
    pub(crate) uris: Vec<String>,
}

impl AltNames {
    fn is_empty(&self) -> bool {
        self.dns.is_empty() && self.ips.is_empty() && self.uris.is_empty()
    }

    /// The subjectAltName extension, critical when the subject is empty (as Go's).
    fn extension(&self, subject: &Name) -> Result<Option<Extension>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let mut names = Vec::new();
        for d in &self.dns {
            names.push(GeneralName::DnsName(Ia5String::new(d).map_err(err)?));
        }
        for ip in &self.ips {
            let bytes = match ip {
                std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
                std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
            };
            names.push(GeneralName::IpAddress(
                OctetString::new(bytes).map_err(err)?,
            ));
        }
        for u in &self.uris {
            names.push(GeneralName::UniformResourceIdentifier(
                Ia5String::new(u).map_err(err)?,
            ));
        }
        let value = x509_cert::ext::pkix::SubjectAltName(names)
            .to_der()
            .map_err(err)?;
        Ok(Some(extension(
            SUBJECT_ALT_NAME,
            subject.0.is_empty(),
            value,
        )?))
    }

    /// The alternative names a request asks for (its extensionRequest's subjectAltName).
    fn of_request(request: &CertReq) -> Result<AltNames, String> {
        let mut names = AltNames::default();
        for attribute in request.info.attributes.iter() {
            if attribute.oid != EXTENSION_REQUEST {
                continue;
            }
            for value in attribute.values.iter() {
                let extensions: Vec<Extension> = value.decode_as().map_err(err)?;
                for e in extensions.iter().filter(|e| e.extn_id == SUBJECT_ALT_NAME) {
                    let san =
                        x509_cert::ext::pkix::SubjectAltName::from_der(e.extn_value.as_bytes())
                            .map_err(err)?;
                    for name in san.0 {
                        match name {
                            GeneralName::DnsName(d) => names.dns.push(d.to_string()),
                            GeneralName::UniformResourceIdentifier(u) => {
                                names.uris.push(u.to_string())
                            }
                            GeneralName::IpAddress(o) => match o.as_bytes().len() {
                                4 => names.ips.push(std::net::IpAddr::from(
                                    <[u8; 4]>::try_from(o.as_bytes()).map_err(err)?,
                                )),
                                16 => names.ips.push(std::net::IpAddr::from(
                                    <[u8; 16]>::try_from(o.as_bytes()).map_err(err)?,
                                )),
                                _ => {}
                            },
                            _ => {}
                        }
                    }
                }
            }
        }
        Ok(names)
    }
}

fn extension(id: ObjectIdentifier, critical: bool, value: Vec<u8>) -> Result<Extension, String> {
    Ok(Extension {
        extn_id: id,
        critical,
        extn_value: OctetString::new(value).map_err(err)?,
    })
}

/// What the provider puts in a certificate's template.
pub(crate) struct Template {
    pub(crate) serial: u128,
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    pub(crate) subject: Name,
    pub(crate) names: AltNames,
    pub(crate) allowed_uses: Vec<String>,
    pub(crate) is_ca: bool,
    pub(crate) max_path_length: Option<i64>,
    pub(crate) subject_key_id: Option<Vec<u8>>,
    pub(crate) authority_key_id: Option<Vec<u8>>,
}

/// The issuer of a certificate: its name, public key and subject key identifier.
pub(crate) struct Issuer<'a> {
    pub(crate) name: Name,
    pub(crate) key: &'a Key,
    /// The SubjectPublicKeyInfo of the issuer's certificate, DER: the key must be its.
    pub(crate) certificate_key: Vec<u8>,
    pub(crate) subject_key_id: Option<Vec<u8>>,
}

fn time(unix: i64) -> Result<Time, String> {
    let seconds = u64::try_from(unix).map_err(|_| "a time before 1970".to_owned())?;
    let at =
        der::DateTime::from_unix_duration(std::time::Duration::from_secs(seconds)).map_err(err)?;
    // RFC 5280: UTCTime through 2049, GeneralizedTime from 2050.
    Ok(if at.year() < 2050 {
        Time::UtcTime(der::asn1::UtcTime::from_date_time(at).map_err(err)?)
    } else {
        Time::GeneralTime(der::asn1::GeneralizedTime::from_date_time(at))
    })
}

/// Go's key usage BIT STRING: bit n of the usage is bit n from the left, trailing zero bits
/// dropped.
fn key_usage_bits(usage: u16) -> Result<BitString, String> {
    let bytes = [
        (usage as u8).reverse_bits(),
        ((usage >> 8) as u8).reverse_bits(),
    ];
    let len = if bytes[1] == 0 { 1 } else { 2 };
    let last = bytes[len - 1];
    let unused = last.trailing_zeros().min(7) as u8;
    BitString::new(unused, bytes[..len].to_vec()).map_err(err)
}

/// A certificate, DER, made from `template` for `public_key` and signed by `issuer`, as Go's
/// `x509.CreateCertificate` writes it.
pub(crate) fn create(
    template: &Template,
    public_key: SubjectPublicKeyInfoOwned,
    issuer: &Issuer<'_>,
) -> Result<Vec<u8>, String> {
    let mut usage = 0u16;
    let mut extended = Vec::new();
    for u in &template.allowed_uses {
        if let Some((_, bit)) = KEY_USAGES.iter().find(|(n, _)| n == u) {
            usage |= bit;
        } else if let Some((_, id)) = EXT_KEY_USAGES.iter().find(|(n, _)| n == u) {
            extended.push(oid(id));
        }
    }
    let path_len = match template.max_path_length {
        Some(n) if n > 0 => {
            if !template.is_ca {
                return Err("x509: only CAs are allowed to specify MaxPathLen".into());
            }
            Some(u8::try_from(n).map_err(|_| format!("max_path_length {n} is more than 255"))?)
        }
        _ => None,
    };
    let mut extensions = Vec::new();
    if usage != 0 {
        let value = key_usage_bits(usage)?.to_der().map_err(err)?;
        extensions.push(extension(oid("2.5.29.15"), true, value)?);
    }
    if !extended.is_empty() {
        let value = x509_cert::ext::pkix::ExtendedKeyUsage(extended)
            .to_der()
            .map_err(err)?;
        extensions.push(extension(oid("2.5.29.37"), false, value)?);
    }
    let constraints = x509_cert::ext::pkix::BasicConstraints {
        ca: template.is_ca,
        path_len_constraint: path_len,
    };
    extensions.push(extension(
        BASIC_CONSTRAINTS,
        true,
        constraints.to_der().map_err(err)?,
    )?);
    if let Some(id) = &template.subject_key_id {
        let value = OctetString::new(id.clone())
            .and_then(|o| o.to_der())
            .map_err(err)?;
        extensions.push(extension(SUBJECT_KEY_ID, false, value)?);
    }
    // Go names the issuer's key whenever the issuer is another name, or when told to.
    let issuer_der = issuer.name.to_der().map_err(err)?;
    let subject_der = template.subject.to_der().map_err(err)?;
    let authority = template.authority_key_id.clone().or_else(|| {
        (issuer_der != subject_der)
            .then(|| issuer.subject_key_id.clone())
            .flatten()
    });
    if let Some(id) = authority {
        let value = x509_cert::ext::pkix::AuthorityKeyIdentifier {
            key_identifier: Some(OctetString::new(id).map_err(err)?),
            authority_cert_issuer: None,
            authority_cert_serial_number: None,
        }
        .to_der()
        .map_err(err)?;
        extensions.push(extension(oid("2.5.29.35"), false, value)?);
    }
    if let Some(san) = template.names.extension(&template.subject)? {
        extensions.push(san);
    }
    // The signer must be the key of the issuer's certificate.
    if issuer.key.public_der()? != issuer.certificate_key {
        return Err("x509: provided PrivateKey doesn't match parent's PublicKey".into());
    }
    let (algorithm, _) = issuer.key.sign(&[])?;
    let tbs = TbsCertificate {
        version: Version::V3,
        serial_number: SerialNumber::new(&template.serial.to_be_bytes()).map_err(err)?,
        signature: algorithm.clone(),
        issuer: issuer.name.clone(),
        validity: Validity {
            not_before: time(template.not_before)?,
            not_after: time(template.not_after)?,
        },
        subject: template.subject.clone(),
        subject_public_key_info: public_key,
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: Some(extensions),
    };
    let (_, signature) = issuer.key.sign(&tbs.to_der().map_err(err)?)?;
    Certificate {
        tbs_certificate: tbs,
        signature_algorithm: algorithm,
        signature: BitString::from_bytes(&signature).map_err(err)?,
    }
    .to_der()
    .map_err(err)
}

/// A certificate request, DER, as Go's `x509.CreateCertificateRequest` writes it.
pub(crate) fn request(subject: Name, names: &AltNames, key: &Key) -> Result<Vec<u8>, String> {
    let mut attributes = Vec::new();
    if let Some(san) = names.extension(&subject)? {
        let extensions = Any::encode_from(&vec![san]).map_err(err)?;
        attributes.push(Attribute {
            oid: EXTENSION_REQUEST,
            values: SetOfVec::try_from(vec![extensions]).map_err(err)?,
        });
    }
    let info = CertReqInfo {
        version: x509_cert::request::Version::V1,
        subject,
        public_key: key.spki()?,
        attributes: SetOfVec::try_from(attributes).map_err(err)?,
    };
    let (algorithm, signature) = key.sign(&info.to_der().map_err(err)?)?;
    CertReq {
        info,
        algorithm,
        signature: BitString::from_bytes(&signature).map_err(err)?,
    }
    .to_der()
    .map_err(err)
}

/// The first PEM block of `text` if it has `label`, decoded; the provider's messages if not.
pub(crate) fn decode_pem(text: &str, label: &str) -> Result<Vec<u8>, String> {
    let Some((found, block)) = super::keys::first_pem_block(text) else {
        return Err(format!(
            "failed to decode PEM of expected type \"{label}\" from bytes"
        ));
    };
    if found != label {
        return Err(format!(
            "invalid PEM type - expected \"{label}\", got \"{found}\""
        ));
    }
    let (_, der) = der::pem::decode_vec(block.as_bytes()).map_err(err)?;
    Ok(der)
}

/// A certificate request's subject, alternative names and public key (its signature is not
/// checked, as the provider does not).
pub(crate) fn read_request(
    pem: &str,
) -> Result<(Name, AltNames, SubjectPublicKeyInfoOwned), String> {
    let der = decode_pem(pem, "CERTIFICATE REQUEST")?;
    let request =
        CertReq::from_der(&der).map_err(|e| format!("failed to parse certificate request: {e}"))?;
    let names = AltNames::of_request(&request)?;
    Ok((request.info.subject, names, request.info.public_key))
}

/// A certificate, parsed.
pub(crate) fn read_certificate(pem: &str) -> Result<Certificate, String> {
    let der = decode_pem(pem, "CERTIFICATE")?;
    Certificate::from_der(&der).map_err(|e| format!("failed to parse certificate: {e}"))
}

fn extension_of(cert: &Certificate, id: ObjectIdentifier) -> Option<&Extension> {
    cert.tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|e| e.extn_id == id)
}

/// Whether the certificate says it is a CA (basic constraints).
pub(crate) fn is_ca(cert: &Certificate) -> bool {
    basic_constraints(cert).is_some_and(|c| c.ca)
}

fn basic_constraints(cert: &Certificate) -> Option<x509_cert::ext::pkix::BasicConstraints> {
    let e = extension_of(cert, BASIC_CONSTRAINTS)?;
    x509_cert::ext::pkix::BasicConstraints::from_der(e.extn_value.as_bytes()).ok()
}

/// The certificate's subject key identifier, if it has one.
pub(crate) fn subject_key_id(cert: &Certificate) -> Option<Vec<u8>> {
    let e = extension_of(cert, SUBJECT_KEY_ID)?;
    OctetString::from_der(e.extn_value.as_bytes())
        .ok()
        .map(|o| o.as_bytes().to_vec())
}

/// Go's `pkix.Name.String()`: the known attributes in Go's order, last first, others (as
/// `OID=#hex`) at the end.
pub(crate) fn name_string(name: &Name) -> String {
    let known: Vec<&str> = SUBJECT_FIELDS.iter().map(|(_, id)| *id).collect();
    let attributes: Vec<&AttributeTypeAndValue> =
        name.0.iter().flat_map(|rdn| rdn.0.iter()).collect();
    let mut rdns: Vec<Vec<(String, String)>> = Vec::new();
    // Unknown attributes first in the sequence, so last in the string.
    for atv in &attributes {
        let id = atv.oid.to_string();
        if !known.contains(&id.as_str()) {
            let text = value_text(&atv.value);
            let marshalled = string_value(&text)
                .and_then(|v| v.to_der().map_err(err))
                .unwrap_or_default();
            let hex: String = marshalled.iter().map(|b| format!("{b:02x}")).collect();
            rdns.push(vec![(id, format!("#{hex}"))]);
        }
    }
    let short = |id: &str| match id {
        "2.5.4.6" => "C",
        "2.5.4.8" => "ST",
        "2.5.4.7" => "L",
        "2.5.4.9" => "STREET",
        "2.5.4.17" => "POSTALCODE",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.3" => "CN",
        _ => "SERIALNUMBER",
    };
    for (_, id) in SUBJECT_FIELDS {
        let values: Vec<(String, String)> = attributes
            .iter()
            .filter(|a| a.oid.to_string() == id)
            .map(|a| (short(id).to_owned(), escape(&value_text(&a.value))))
            .collect();
        // Go keeps one value of the single-valued fields (the last one parsed).
        let values = if ["2.5.4.3", "2.5.4.5"].contains(&id) {
            values.into_iter().last().into_iter().collect()
        } else {
            values
        };
        if !values.is_empty() {
            rdns.push(values);
        }
    }
    rdns.iter()
        .rev()
        .map(|rdn| {
            rdn.iter()
                .map(|(t, v)| format!("{t}={v}"))
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn value_text(value: &Any) -> String {
    String::from_utf8_lossy(value.value()).into_owned()
}

fn escape(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mut out = String::new();
    for (k, c) in chars.iter().enumerate() {
        let escaped = match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' => true,
            ' ' => k == 0 || k == chars.len() - 1,
            '#' => k == 0,
            _ => false,
        };
        if escaped {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

fn rfc3339(t: &Time) -> String {
    let unix = t.to_unix_duration().as_secs() as i64;
    crate::time::format_rfc3339(crate::time::Instant { unix, offset: 0 })
}

/// What `data "tls_certificate"` reports of a certificate, as Go's `x509.Certificate`
/// fields print.
pub(crate) fn describe(
    cert: &Certificate,
) -> Result<Vec<(&'static str, gpustack_protocol::Value)>, String> {
    use gpustack_protocol::Value;
    let tbs = &cert.tbs_certificate;
    let signature = match cert.signature_algorithm.oid.to_string().as_str() {
        "1.2.840.113549.1.1.4" => "MD5-RSA",
        "1.2.840.113549.1.1.5" => "SHA1-RSA",
        "1.2.840.113549.1.1.11" => "SHA256-RSA",
        "1.2.840.113549.1.1.12" => "SHA384-RSA",
        "1.2.840.113549.1.1.13" => "SHA512-RSA",
        "1.2.840.113549.1.1.10" => "SHA256-RSAPSS",
        "1.2.840.10040.4.3" => "DSA-SHA1",
        "2.16.840.1.101.3.4.3.2" => "DSA-SHA256",
        "1.2.840.10045.4.1" => "ECDSA-SHA1",
        "1.2.840.10045.4.3.2" => "ECDSA-SHA256",
        "1.2.840.10045.4.3.3" => "ECDSA-SHA384",
        "1.2.840.10045.4.3.4" => "ECDSA-SHA512",
        "1.3.101.112" => "Ed25519",
        _ => "0",
    };
    let public = match tbs
        .subject_public_key_info
        .algorithm
        .oid
        .to_string()
        .as_str()
    {
        "1.2.840.113549.1.1.1" => "RSA",
        "1.2.840.10040.4.1" => "DSA",
        "1.2.840.10045.2.1" => "ECDSA",
        "1.3.101.112" => "Ed25519",
        _ => "0",
    };
    let serial = num_bigint::BigUint::from_bytes_be(tbs.serial_number.as_bytes()).to_string();
    let constraints = basic_constraints(cert);
    let max_path = match &constraints {
        Some(c) => c.path_len_constraint.map_or(-1, i64::from),
        None => 0,
    };
    let der = cert.to_der().map_err(err)?;
    let sha1: String = <sha1::Sha1 as sha1::Digest>::digest(&der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let pem =
        der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, &der).map_err(err)?;
    let version = match tbs.version {
        Version::V1 => 1,
        Version::V2 => 2,
        Version::V3 => 3,
    };
    Ok(vec![
        ("signature_algorithm", Value::string(signature)),
        ("public_key_algorithm", Value::string(public)),
        ("serial_number", Value::String(serial)),
        ("is_ca", Value::Bool(constraints.is_some_and(|c| c.ca))),
        ("max_path_length", Value::number(max_path)),
        ("version", Value::number(version)),
        ("issuer", Value::String(name_string(&tbs.issuer))),
        ("subject", Value::String(name_string(&tbs.subject))),
        (
            "not_before",
            Value::String(rfc3339(&tbs.validity.not_before)),
        ),
        ("not_after", Value::String(rfc3339(&tbs.validity.not_after))),
        ("sha1_fingerprint", Value::String(sha1)),
        ("cert_pem", Value::String(pem)),
    ])
}

/// The id of `data "tls_certificate"`: as the provider, a hash of the certificates' fields.
pub(crate) fn certificates_id(fields: &[Vec<(&'static str, gpustack_protocol::Value)>]) -> String {
    let rendered: Vec<String> = fields
        .iter()
        .map(|cert| {
            let parts: Vec<String> = cert
                .iter()
                .map(|(_, v)| match v {
                    gpustack_protocol::Value::String(s) => format!("{s:?}"),
                    gpustack_protocol::Value::Bool(b) => b.to_string(),
                    gpustack_protocol::Value::Number(n) => n.to_string(),
                    _ => String::new(),
                })
                .collect();
            format!("{{{}}}", parts.join(" "))
        })
        .collect();
    hash_for_state(format!("[{}]", rendered.join(" ")).as_bytes())
}
