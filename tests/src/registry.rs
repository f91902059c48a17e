//! A module registry that speaks Terraform's Module Registry Protocol as its documentation
//! writes it (developer.hashicorp.com/terraform/internals/module-registry-protocol): service
//! discovery at `/.well-known/terraform.json` naming `modules.v1`, `GET :namespace/:name/
//! :provider/versions`, and `GET .../:version/download` answered `204 No Content` with the
//! package's location in `X-Terraform-Get` (here an archive on the same host, given relative
//! to the download URL, as registries may). Over TLS with a CA of its own (`SSL_CERT_FILE`),
//! and every request but discovery refused without the bearer token.

use crate::http::{Answer, dropped, serve};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Response, StatusCode};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The bearer token the registry accepts.
pub const TOKEN: &str = "registry-test-token";

#[derive(Default)]
struct World {
    /// `namespace/name/provider` → version → the package as a tar.gz.
    modules: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    stopped: bool,
    log: Vec<String>,
}

pub struct RegistryFake {
    /// `127.0.0.1:PORT`: the host a module source names.
    pub host: String,
    pub ca_file: PathBuf,
    world: Arc<Mutex<World>>,
    _dir: tempfile::TempDir,
}

impl RegistryFake {
    pub fn start() -> Self {
        gpustack_connect::install_ring();
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "gpustack test registry CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let world = Arc::new(Mutex::new(World::default()));
        let shared = world.clone();
        serve(listener, Some(acceptor), move || async move {
            move |request: hyper::Request<hyper::body::Incoming>| {
                let world = shared.clone();
                async move { handle(&request, &world) }
            }
        });
        Self {
            host,
            ca_file,
            world,
            _dir: dir,
        }
    }

    /// Publishes `version` of `namespace/name/provider`, whose package holds `files`.
    pub fn publish(&self, module: &str, version: &str, files: &[(&str, &str)]) {
        let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        for (name, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            archive
                .append_data(&mut header, name, text.as_bytes())
                .unwrap();
        }
        let bytes = archive.into_inner().unwrap().finish().unwrap();
        self.world
            .lock()
            .unwrap()
            .modules
            .entry(module.to_owned())
            .or_default()
            .insert(version.to_owned(), bytes);
    }

    /// Closes every connection unanswered from now on, as a registry that is down.
    pub fn stop(&self) {
        self.world.lock().unwrap().stopped = true;
    }

    /// "path" of each request so far.
    pub fn log(&self) -> Vec<String> {
        self.world.lock().unwrap().log.clone()
    }
}

fn answer(status: StatusCode, headers: &[(&str, String)], body: Vec<u8>) -> Answer {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    Ok(response.body(Full::new(Bytes::from(body))).unwrap())
}

fn handle(request: &hyper::Request<hyper::body::Incoming>, world: &Mutex<World>) -> Answer {
    let mut world = world.lock().unwrap();
    let path = request.uri().path().to_owned();
    world.log.push(path.clone());
    if world.stopped {
        return dropped();
    }
    if path == "/.well-known/terraform.json" {
        return answer(
            StatusCode::OK,
            &[("content-type", "application/json".into())],
            br#"{"modules.v1": "/v1/modules/"}"#.to_vec(),
        );
    }
    let authorized = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {TOKEN}"));
    if !authorized {
        return answer(
            StatusCode::UNAUTHORIZED,
            &[],
            b"{\"errors\":[\"unauthorized\"]}".to_vec(),
        );
    }
    let not_found = || {
        answer(
            StatusCode::NOT_FOUND,
            &[],
            b"{\"errors\":[\"not found\"]}".to_vec(),
        )
    };
    if let Some(rest) = path.strip_prefix("/v1/modules/") {
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            [namespace, name, provider, "versions"] => {
                let key = format!("{namespace}/{name}/{provider}");
                let Some(versions) = world.modules.get(&key) else {
                    return not_found();
                };
                let listed: Vec<serde_json::Value> = versions
                    .keys()
                    .map(|v| serde_json::json!({ "version": v }))
                    .collect();
                let body = serde_json::json!({ "modules": [{ "versions": listed }] });
                return answer(
                    StatusCode::OK,
                    &[("content-type", "application/json".into())],
                    body.to_string().into_bytes(),
                );
            }
            [namespace, name, provider, version, "download"] => {
                let key = format!("{namespace}/{name}/{provider}");
                if !world
                    .modules
                    .get(&key)
                    .is_some_and(|v| v.contains_key(*version))
                {
                    return not_found();
                }
                // Relative to the download URL, as the protocol allows.
                let location = format!("../../../../../../archives/{key}/{version}.tar.gz");
                return answer(
                    StatusCode::NO_CONTENT,
                    &[("x-terraform-get", location)],
                    Vec::new(),
                );
            }
            _ => return not_found(),
        }
    }
    if let Some(rest) = path.strip_prefix("/archives/")
        && let Some((key, file)) = rest.rsplit_once('/')
        && let Some(version) = file.strip_suffix(".tar.gz")
        && let Some(bytes) = world.modules.get(key).and_then(|v| v.get(version))
    {
        return answer(
            StatusCode::OK,
            &[("content-type", "application/gzip".into())],
            bytes.clone(),
        );
    }
    not_found()
}
