//! Terraform's Module Registry Protocol, as `init` speaks it: the host's service discovery
//! (`/.well-known/terraform.json`, `modules.v1`), the versions of a module, the newest that
//! meets the call's constraint, and the download location the registry answers (a git
//! source or an archive), fetched into the stack's module directory. Credentials come from
//! `TF_TOKEN_<host>` and the CLI configuration's `credentials` blocks, as Terraform takes
//! them; `SSL_CERT_FILE` names the roots to trust instead of the built-in ones.

use gpustack_lang::config::remote::RegistrySource;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest archive fetched: far above a module package.
const MAX_ARCHIVE: u64 = 256 << 20;
/// The most files and bytes an archive may unpack to.
const MAX_FILES: usize = 20_000;
const MAX_UNPACKED: u64 = 1 << 30;

/// A version a registry offers, and where its package is.
pub struct Resolved {
    pub version: String,
    pub location: String,
}

pub struct Client {
    agent: ureq::Agent,
}

impl Client {
    pub fn new() -> Result<Self, String> {
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Ok(file) = std::env::var("SSL_CERT_FILE") {
            let pem = std::fs::read(&file).map_err(|e| format!("SSL_CERT_FILE {file}: {e}"))?;
            let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!("SSL_CERT_FILE {file} holds no certificate"));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .max_redirects(5)
            .tls_config(tls.build())
            .build()
            .into();
        Ok(Self { agent })
    }

    /// GET with the host's credentials; the status, a header and the body.
    fn get(
        &self,
        url: &str,
        header: &str,
        limit: u64,
    ) -> Result<(u16, Option<String>, Vec<u8>), String> {
        let mut request = self.agent.get(url).header(
            "User-Agent",
            concat!("gpustack/", env!("CARGO_PKG_VERSION")),
        );
        if let Some(token) = host_of(url).and_then(|h| token_for(&h)) {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        let mut response = request.call().map_err(|e| format!("GET {url}: {e}"))?;
        let status = response.status().as_u16();
        let value = response
            .headers()
            .get(header)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|e| format!("GET {url}: {e}"))?;
        if body.len() as u64 > limit {
            return Err(format!(
                "GET {url}: the answer is larger than {limit} bytes"
            ));
        }
        Ok((status, value, body))
    }

    fn json(&self, url: &str) -> Result<serde_json::Value, String> {
        let (status, _, body) = self.get(url, "content-type", 16 << 20)?;
        match status {
            200 => serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}")),
            401 | 403 => Err(format!(
                "GET {url}: {status}: the registry refused the credentials (set TF_TOKEN_{} or a credentials block in the CLI configuration)",
                host_of(url).map(|h| token_variable(&h)).unwrap_or_default()
            )),
            404 => Err(format!("GET {url}: 404: the registry has no such module")),
            _ => Err(format!("GET {url}: {status}")),
        }
    }

    /// The base URL of the host's module registry (`modules.v1`).
    fn modules_base(&self, host: &str) -> Result<String, String> {
        let root = format!("https://{host}/");
        let discovery = self.json(&format!("{root}.well-known/terraform.json"))?;
        let Some(base) = discovery
            .get("modules.v1")
            .and_then(serde_json::Value::as_str)
        else {
            return Err(format!(
                "{host} does not offer a module registry (no modules.v1 in its service discovery)"
            ));
        };
        let mut base = join(&root, base)?;
        if !base.ends_with('/') {
            base.push('/');
        }
        Ok(base)
    }

    /// The newest version that meets `constraint` (any release when there is none), and
    /// where its package is.
    pub fn resolve(
        &self,
        source: &RegistrySource,
        constraint: Option<&str>,
    ) -> Result<Resolved, String> {
        let base = self.modules_base(&source.host)?;
        let module = format!(
            "{base}{}/{}/{}",
            source.namespace, source.name, source.provider
        );
        let listing = self.json(&format!("{module}/versions"))?;
        let versions: Vec<String> = listing
            .pointer("/modules/0/versions")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("version").and_then(serde_json::Value::as_str))
            .map(|v| v.trim_start_matches('v').to_owned())
            .collect();
        let mut meeting = Vec::new();
        for version in &versions {
            let ok = match constraint {
                Some(c) => gpustack_lang::config::version::meets(version, c)
                    .map_err(|e| format!("the version constraint of {}: {e}", source.package()))?,
                None => !version.contains('-'),
            };
            if ok {
                meeting.push(version.clone());
            }
        }
        meeting.sort_by(|a, b| compare_versions(a, b));
        let Some(version) = meeting.pop() else {
            return Err(format!(
                "{} offers no version that meets {} (it offers {})",
                source.package(),
                constraint.unwrap_or("any release"),
                if versions.is_empty() {
                    "none".to_owned()
                } else {
                    versions.join(", ")
                }
            ));
        };
        let location = self.location(&module, &version)?;
        Ok(Resolved { version, location })
    }

    /// Where version `version`'s package is: the registry's `X-Terraform-Get` (or the
    /// `location` of a JSON answer), resolved against the download URL.
    pub fn location_of(&self, source: &RegistrySource, version: &str) -> Result<String, String> {
        let base = self.modules_base(&source.host)?;
        let module = format!(
            "{base}{}/{}/{}",
            source.namespace, source.name, source.provider
        );
        self.location(&module, version)
    }

    fn location(&self, module: &str, version: &str) -> Result<String, String> {
        let url = format!("{module}/{version}/download");
        let (status, header, body) = self.get(&url, "x-terraform-get", 1 << 20)?;
        let location = match status {
            204 | 200 if header.is_some() => header.unwrap_or_default(),
            200 => serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|j| {
                    j.get("location")
                        .and_then(|l| l.as_str())
                        .map(str::to_owned)
                })
                .ok_or_else(|| format!("GET {url}: the answer names no location"))?,
            other => return Err(format!("GET {url}: {other}")),
        };
        if location.contains("::") && !location.starts_with("git::") {
            return Err(format!(
                "the registry answers {location} for {url}: gpustack fetches git sources and http(s) archives, not this getter"
            ));
        }
        if location.starts_with("git::") {
            Ok(location)
        } else {
            join(&url, &location)
        }
    }

    /// Fetches an archive location (`https://.../pkg.tar.gz`, `?archive=zip`, `//DIR`) and
    /// unpacks it into `dest`; returns the SHA-256 of the archive.
    pub fn fetch_archive(&self, location: &str, dest: &Path) -> Result<String, String> {
        use sha2::Digest;
        let (url, _) = split_subdir(location);
        let (status, _, bytes) = self.get(&url, "content-type", MAX_ARCHIVE)?;
        if status != 200 {
            return Err(format!("GET {url}: {status}"));
        }
        let digest: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let kind = archive_kind(&url).ok_or_else(|| {
            format!("{url} is not an archive gpustack unpacks (.tar.gz, .tgz or .zip)")
        })?;
        let tmp = dest.with_file_name(format!(
            ".unpack-{}-{}",
            std::process::id(),
            dest.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("module")
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let unpacked = match kind {
            Archive::TarGz => unpack_tar_gz(&bytes, &tmp),
            Archive::Zip => unpack_zip(&bytes, &tmp),
        };
        if let Err(e) = unpacked {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(format!("{url}: {e}"));
        }
        let _ = std::fs::remove_dir_all(dest);
        std::fs::rename(&tmp, dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        Ok(digest)
    }
}

/// A location's package and the directory inside it (`URL//DIR`), as go-getter reads it.
pub fn split_subdir(location: &str) -> (String, String) {
    let after_scheme = location.find("://").map_or(0, |i| i + 3);
    let (path, query) = match location.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (location, None),
    };
    match path[after_scheme..].find("//") {
        Some(i) => {
            let (url, subdir) = path.split_at(after_scheme + i);
            let url = match query {
                Some(q) => format!("{url}?{q}"),
                None => url.to_owned(),
            };
            (url, subdir.trim_matches('/').to_owned())
        }
        None => (location.to_owned(), String::new()),
    }
}

enum Archive {
    TarGz,
    Zip,
}

fn archive_kind(url: &str) -> Option<Archive> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let named = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("archive="))
        .unwrap_or(path);
    if named.ends_with("tar.gz") || named.ends_with("tgz") {
        Some(Archive::TarGz)
    } else if named.ends_with("zip") {
        Some(Archive::Zip)
    } else {
        None
    }
}

/// A path inside an archive, refused when it could land outside the directory it unpacks to.
fn inside(dest: &Path, name: &Path) -> Result<PathBuf, String> {
    use std::path::Component;
    if name.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Err(format!(
            "the archive holds {}, which would land outside the module's directory",
            name.display()
        ));
    }
    Ok(dest.join(name))
}

fn unpack_tar_gz(bytes: &[u8], dest: &Path) -> Result<(), String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let (mut files, mut total) = (0usize, 0u64);
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        let name = entry.path().map_err(|e| e.to_string())?.into_owned();
        let target = inside(dest, &name)?;
        let kind = entry.header().entry_type();
        files += 1;
        total += entry.size();
        if files > MAX_FILES || total > MAX_UNPACKED {
            return Err("the archive unpacks to more than a module package holds".to_owned());
        }
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
        } else if kind.is_file() {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            let mut out = Vec::new();
            (&mut entry)
                .take(MAX_UNPACKED)
                .read_to_end(&mut out)
                .map_err(|e| e.to_string())?;
            std::fs::write(&target, out).map_err(|e| e.to_string())?;
        } else {
            // Links could point anywhere, devices and FIFOs are not module files.
            return Err(format!(
                "the archive holds {}, which is neither a file nor a directory",
                name.display()
            ));
        }
    }
    Ok(())
}

fn unpack_zip(bytes: &[u8], dest: &Path) -> Result<(), String> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    if archive.len() > MAX_FILES {
        return Err("the archive unpacks to more than a module package holds".to_owned());
    }
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).map_err(|e| e.to_string())?;
        let Some(name) = file.enclosed_name() else {
            return Err(format!(
                "the archive holds {}, which would land outside the module's directory",
                file.name().unwrap_or_default()
            ));
        };
        let target = inside(dest, &name)?;
        total += file.size();
        if total > MAX_UNPACKED {
            return Err("the archive unpacks to more than a module package holds".to_owned());
        }
        if file.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
        } else if file.is_file() {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            let mut out = Vec::new();
            (&mut file)
                .take(MAX_UNPACKED)
                .read_to_end(&mut out)
                .map_err(|e| e.to_string())?;
            std::fs::write(&target, out).map_err(|e| e.to_string())?;
        } else {
            return Err(format!(
                "the archive holds {}, which is neither a file nor a directory",
                file.name().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// `relative` resolved against `base`, as a browser resolves a link.
fn join(base: &str, relative: &str) -> Result<String, String> {
    if relative.starts_with("https://") || relative.starts_with("http://") {
        return Ok(relative.to_owned());
    }
    let scheme_end = base.find("://").map(|i| i + 3).ok_or("not a URL")?;
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    if let Some(path) = relative.strip_prefix('/') {
        return Ok(format!("{}/{path}", &base[..host_end]));
    }
    let dir_end = base
        .rfind('/')
        .filter(|&i| i >= host_end)
        .unwrap_or(host_end);
    let mut segments: Vec<&str> = base[host_end..dir_end]
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    for part in relative.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    Ok(format!("{}/{}", &base[..host_end], segments.join("/")))
}

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    Some(rest.split(['/', '?']).next()?.to_ascii_lowercase())
}

/// `TF_TOKEN_` and the host with `.` as `_` and `-` as `__`, as Terraform names it.
fn token_variable(host: &str) -> String {
    format!(
        "TF_TOKEN_{}",
        host.replace('-', "__")
            .replace('.', "_")
            .replace(':', "___")
    )
}

/// The token for `host`: `TF_TOKEN_<host>`, else a `credentials "HOST" { token = ... }`
/// block of the CLI configuration (`TF_CLI_CONFIG_FILE`, else `~/.terraformrc`).
fn token_for(host: &str) -> Option<String> {
    if let Ok(token) = std::env::var(token_variable(host)) {
        return Some(token);
    }
    let file = std::env::var("TF_CLI_CONFIG_FILE")
        .map(PathBuf::from)
        .ok()
        .or_else(|| {
            std::env::var("HOME")
                .ok()
                .map(|h| Path::new(&h).join(".terraformrc"))
        })?;
    let text = std::fs::read_to_string(file).ok()?;
    let body = hcl_edit::parser::parse_body(&text).ok()?;
    body.get_blocks("credentials").find_map(|block| {
        let label = block.labels.first()?.as_str().to_ascii_lowercase();
        if label != host {
            return None;
        }
        let attr = block.body.get_attribute("token")?;
        gpustack_lang::expr::literal::literal_str(&attr.value)
    })
}

/// Semantic versions in order: numbers first, a pre-release before its release.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |v: &str| -> (Vec<u64>, Option<String>) {
        let (core, pre) = match v.split_once('-') {
            Some((core, pre)) => (core, Some(pre.to_owned())),
            None => (v.split('+').next().unwrap_or(v), None),
        };
        (
            core.split('.').map(|p| p.parse().unwrap_or(0)).collect(),
            pre,
        )
    };
    let (a, b) = (split(a), split(b));
    a.0.cmp(&b.0).then_with(|| match (&a.1, &b.1) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_as_the_protocol_says() {
        assert_eq!(
            join(
                "https://r.example/v1/modules/a/b/c/1.0.0/download",
                "./pkg.tar.gz"
            )
            .unwrap(),
            "https://r.example/v1/modules/a/b/c/1.0.0/pkg.tar.gz"
        );
        assert_eq!(
            join(
                "https://r.example/v1/modules/a/b/c/1.0.0/download",
                "/archives/x.zip"
            )
            .unwrap(),
            "https://r.example/archives/x.zip"
        );
        assert_eq!(
            split_subdir("https://r.example/x.tar.gz//modules/gpu?archive=tar.gz"),
            (
                "https://r.example/x.tar.gz?archive=tar.gz".to_owned(),
                "modules/gpu".to_owned()
            )
        );
        assert_eq!(
            token_variable("my-registry.example.com"),
            "TF_TOKEN_my__registry_example_com"
        );
        let mut versions = vec!["1.10.0", "1.2.0", "2.0.0-rc1", "2.0.0", "1.9.9"];
        versions.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(versions, ["1.2.0", "1.9.9", "1.10.0", "2.0.0-rc1", "2.0.0"]);
    }
}
