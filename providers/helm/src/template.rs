//! `data "helm_template"`: a chart rendered by `helm template`, with the values, flags and
//! credentials of `helm_release`, answered as Terraform's helm provider answers it: `manifest`
//! (every document after `---`), `manifests` (by template), `notes` and `crds`.

use super::{HelmCli, namespace_of, set, values_files};
use base64::Engine as _;
use gpustack_protocol::Value;
use gpustack_provider_sdk::check::{attribute, text};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Terraform's default read timeout of the data source.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// The documents of rendered output as Terraform's helm provider keys them (helm's
/// `SplitManifests`): trimmed, empty ones dropped, `manifest-N` in order.
fn split(rendered: &str) -> Vec<(String, String)> {
    // helm's separator is `---` at the start of the text or of a line, blanks around it
    // belonging to neither document.
    let text = rendered.strip_prefix("---").unwrap_or(rendered);
    text.split("\n---")
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .enumerate()
        .map(|(i, d)| (format!("manifest-{i}"), d.to_owned()))
        .collect()
}

/// The template a rendered document comes from (`# Source: CHART/PATH`): PATH.
fn source_of(document: &str) -> Option<String> {
    document.lines().find_map(|line| {
        let rest = line.split_once("# Source: ")?.1;
        let (_, path) = rest.split_once('/')?;
        (!path.is_empty()).then(|| path.to_owned())
    })
}

/// `manifest` and `manifests` of rendered output, as Terraform's helm provider builds them:
/// the documents in the order of their keys sorted as text, each after `---`; and by the
/// template each came from (`# Source: CHART/PATH`), keyed by PATH.
fn outputs(rendered: &str) -> (String, BTreeMap<String, String>) {
    let mut documents = split(rendered);
    documents.sort_by(|a, b| a.0.cmp(&b.0));
    let mut manifest = String::new();
    let mut manifests: BTreeMap<String, String> = BTreeMap::new();
    for (_, document) in documents {
        let source = source_of(&document);
        let entry = format!("---\n{document}\n");
        manifest.push_str(&entry);
        manifests
            .entry(source.unwrap_or_default())
            .or_default()
            .push_str(&entry);
    }
    (manifest, manifests)
}

/// Whether a local chart directory's templates write a DRA object at all: only those are
/// rendered at plan.
fn writes_dra_objects(chart: &std::path::Path) -> bool {
    fn scan(dir: &std::path::Path, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|entry| {
            let path = entry.path();
            if path.is_dir() {
                depth < 8 && scan(&path, depth + 1)
            } else {
                std::fs::read_to_string(&path).is_ok_and(|t| t.contains("resource.k8s.io/"))
            }
        })
    }
    scan(&chart.join("templates"), 0) || scan(&chart.join("charts"), 0)
}

/// The DRA objects of rendered output (`helm template`), as the GPU model reads them from a
/// manifest: each DeviceClass, ResourceClaim and ResourceClaimTemplate with the template it
/// comes from, located at the release's `chart`.
/// Past the decode limits the rest is not read, and the error says so: the release's claims
/// after that point would go unchecked.
pub(crate) fn device_requests(
    rendered: &str,
    namespace: &str,
) -> Result<Vec<gpustack_protocol::GpuFact>, String> {
    use gpustack_protocol::limits::{MAX_ELEMENTS, MAX_STRING_BYTES};
    use gpustack_protocol::{DeviceRequestFact, DeviceRequestKind, GpuFact, PathStep, path};
    let mut facts = Vec::new();
    let mut budget = gpustack_protocol::limits::DecodeCost::default();
    for (key, document) in split(rendered) {
        let source = source_of(&document).unwrap_or(key);
        let object = match gpustack_cluster::yaml::from_str_within(&document, &mut budget) {
            Ok(object) => object,
            Err(e) if budget.elements > MAX_ELEMENTS || budget.bytes > MAX_STRING_BYTES => {
                return Err(format!(
                    "the rendered output is read no further than {source}: {e}"
                ));
            }
            // A document that is not YAML is helm's to refuse at install.
            Err(_) => continue,
        };
        let api_version = object
            .get("apiVersion")
            .and_then(Json::as_str)
            .unwrap_or("");
        let Some(kind) = object
            .get("kind")
            .and_then(Json::as_str)
            .and_then(DeviceRequestKind::from_kind)
        else {
            continue;
        };
        if !api_version.starts_with("resource.k8s.io/") {
            continue;
        }
        let name = object
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let pointer = if kind == DeviceRequestKind::ResourceClaimTemplate {
            "/spec/spec"
        } else {
            "/spec"
        };
        let mut attribute = path(["chart"]);
        attribute.push(PathStep::Key(source));
        facts.push(GpuFact::DeviceRequest(DeviceRequestFact {
            kind,
            name,
            namespace: (kind != DeviceRequestKind::DeviceClass).then(|| {
                object
                    .pointer("/metadata/namespace")
                    .and_then(Json::as_str)
                    .unwrap_or(namespace)
                    .to_owned()
            }),
            spec: Some(object.pointer(pointer).cloned().unwrap_or(Json::Null)),
            attribute,
        }));
    }
    Ok(facts)
}

impl HelmCli {
    /// The DRA objects a release's chart renders with its values, when the chart is a local
    /// directory whose templates write one (a chart from a repository is not fetched at plan).
    pub(crate) async fn rendered_device_requests(
        &self,
        planned: &Value,
    ) -> Result<Vec<gpustack_protocol::GpuFact>, String> {
        let Some(chart) = text(planned, "chart") else {
            return Ok(Vec::new());
        };
        let dir = std::path::Path::new(chart);
        if text(planned, "repository").is_some()
            || !dir.is_dir()
            || !attribute(planned, "values").is_none_or(Value::is_wholly_known)
            || !writes_dra_objects(dir)
        {
            return Ok(Vec::new());
        }
        let (values, sensitive) = values_files(planned)?;
        let namespace = namespace_of(planned);
        let mut args: Vec<String> = vec![
            "template".into(),
            text(planned, "name").unwrap_or_default().into(),
            chart.into(),
            "-n".into(),
            namespace.clone(),
            "-f".into(),
            values.path().display().to_string(),
        ];
        if let Some(file) = &sensitive {
            args.extend(["-f".into(), file.path().display().to_string()]);
        }
        let rendered = self
            .run_within(&args, READ_TIMEOUT)
            .await
            .map_err(|e| format!("helm template failed: {e}"))?;
        device_requests(&rendered, &namespace)
    }

    /// Renders the chart `config` names; its state with the computed attributes.
    pub(crate) async fn render(&self, config: &Value) -> Result<Value, String> {
        let limit = attribute(config, "timeouts")
            .and_then(|t| text(t, "read"))
            .and_then(super::go_duration)
            .unwrap_or(READ_TIMEOUT);
        let (values, sensitive) = values_files(config)?;
        let name = text(config, "name").unwrap_or_default().to_owned();
        let mut common: Vec<String> = vec![
            name.clone(),
            text(config, "chart").unwrap_or_default().into(),
            "-n".into(),
            namespace_of(config),
            "-f".into(),
            values.path().display().to_string(),
        ];
        if let Some(file) = &sensitive {
            // After the values file: set_sensitive overrides, as in helm_release.
            common.extend(["-f".into(), file.path().display().to_string()]);
        }
        if let Some(repository) = text(config, "repository") {
            common.extend(["--repo".into(), repository.into()]);
        }
        if let Some(version) = text(config, "version") {
            common.extend(["--version".into(), version.into()]);
        }
        common.extend(self.release_flags(config, true));

        let mut template: Vec<String> = vec!["template".into()];
        template.extend(common.iter().cloned());
        let on = |name: &str| attribute(config, name).and_then(Value::as_bool) == Some(true);
        for (name, flag) in [
            ("include_crds", "--include-crds"),
            ("is_upgrade", "--is-upgrade"),
            ("skip_tests", "--skip-tests"),
            ("validate", "--validate"),
            ("disable_schema_validation", "--skip-schema-validation"),
        ] {
            if on(name) {
                template.push(flag.into());
            }
        }
        if let Some(version) = text(config, "kube_version") {
            template.extend(["--kube-version".into(), version.into()]);
        }
        for (name, flag) in [
            ("api_versions", "--api-versions"),
            ("show_only", "--show-only"),
        ] {
            for item in attribute(config, name)
                .and_then(Value::as_list)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                template.extend([flag.into(), item.into()]);
            }
        }
        let rendered = self.run_within(&template, limit).await?;

        // The notes and the CRD files, which helm template does not print: the same chart
        // and values in a client-side dry run of the install.
        let mut install: Vec<String> = vec!["install".into()];
        install.extend(common);
        install.extend(["--dry-run=client".into(), "-o".into(), "json".into()]);
        let release: Json = serde_json::from_str(self.run_within(&install, limit).await?.trim())
            .map_err(|e| format!("helm install --dry-run: {e}"))?;
        let notes = release
            .pointer("/info/notes")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let crds: Vec<Value> = release
            .pointer("/chart/files")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter(|f| {
                f.get("name")
                    .and_then(Json::as_str)
                    .is_some_and(|n| n.starts_with("crds/"))
            })
            .filter_map(|f| f.get("data").and_then(Json::as_str))
            .filter_map(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
            .map(|bytes| Value::string(String::from_utf8_lossy(&bytes)))
            .collect();

        let (manifest, manifests) = outputs(&rendered);
        // What set_sensitive put in may be anywhere in the output, encoded or not: all of it
        // is as secret as the values.
        let mark = |v: Value| {
            if sensitive.is_some() {
                Value::sensitive(v)
            } else {
                v
            }
        };
        let mut state = config.clone();
        set(&mut state, "id", Value::string(name));
        set(&mut state, "manifest", mark(Value::string(manifest)));
        set(
            &mut state,
            "manifests",
            mark(Value::Object(
                manifests
                    .into_iter()
                    .map(|(k, v)| (k, Value::string(v)))
                    .collect(),
            )),
        );
        set(&mut state, "notes", mark(Value::string(notes)));
        set(&mut state, "crds", Value::List(crds));
        Ok(state)
    }

    /// `run`, stopped (helm killed) after `limit`.
    async fn run_within(
        &self,
        args: &[String],
        limit: std::time::Duration,
    ) -> Result<String, String> {
        tokio::time::timeout(limit, self.run(args))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "helm {} did not finish within {}s (timeouts.read)",
                    args[0],
                    limit.as_secs()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::outputs;

    /// Terraform's helm provider: every document after `---` in the order of `manifest-N`
    /// sorted as text, and the documents of each template together under its path.
    #[test]
    fn a_charts_dra_objects_are_read_with_the_template_they_come_from() {
        let rendered = "---\n# Source: app/templates/claim.yaml\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: one-gpu\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
        let facts = super::device_requests(rendered, "ml").unwrap();
        assert_eq!(facts.len(), 1);
        let gpustack_protocol::GpuFact::DeviceRequest(fact) = &facts[0] else {
            panic!("{facts:?}")
        };
        assert_eq!(fact.namespace.as_deref(), Some("ml"));
        assert_eq!(
            gpustack_protocol::path_text(&fact.attribute),
            "chart[\"templates/claim.yaml\"]"
        );
        assert_eq!(
            fact.spec
                .as_ref()
                .and_then(|s| s.pointer("/devices/requests/0/name")),
            Some(&serde_json::json!("gpu"))
        );
    }

    /// A rendered document whose aliases copy a long scalar past the limits is not decoded
    /// (nor is anything after it), where it would have built gigabytes; the error names where
    /// reading stopped, so that the plan says the claims after it are unchecked.
    #[test]
    fn rendered_output_past_the_decode_limits_is_read_no_further() {
        let claim = "# Source: app/templates/claim.yaml\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: one-gpu\nspec:\n  devices:\n    requests:\n    - name: gpu\n";
        let aliases: Vec<String> = (0..3000).map(|i| format!("k{i}: *a")).collect();
        let hostile = format!(
            "# Source: app/templates/cm.yaml\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: x\n  labels:\n    x: &a \"{}\"\nspec: {{{}}}\n",
            "x".repeat(2_000_000),
            aliases.join(",")
        );
        let rendered = format!("---\n{claim}---\n{hostile}---\n{claim}");
        let stopped = super::device_requests(&rendered, "ml").unwrap_err();
        assert!(
            stopped.contains("read no further than templates/cm.yaml")
                && stopped.contains("more than 64 MiB of text"),
            "{stopped}"
        );
    }

    #[test]
    fn rendered_documents_are_keyed_and_ordered_as_terraform_does() {
        let mut rendered = String::new();
        for i in 0..11 {
            let template = if i % 2 == 0 { "even" } else { "odd" };
            rendered.push_str(&format!(
                "---\n# Source: probe/templates/{template}.yaml\nkind: ConfigMap\nn: {i}\n"
            ));
        }
        rendered.push_str("---\n\n---\n# Source: probe/templates/tests/t.yaml\nkind: Pod\n");
        let (manifest, manifests) = outputs(&rendered);
        let order: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.strip_prefix("n: "))
            .collect();
        assert_eq!(
            order,
            ["0", "1", "10", "2", "3", "4", "5", "6", "7", "8", "9"]
        );
        assert!(
            manifest.starts_with(
                "---\n# Source: probe/templates/even.yaml\nkind: ConfigMap\nn: 0\n---\n"
            )
        );
        assert_eq!(
            manifests.keys().collect::<Vec<_>>(),
            [
                "templates/even.yaml",
                "templates/odd.yaml",
                "templates/tests/t.yaml"
            ]
        );
        assert_eq!(
            manifests["templates/odd.yaml"],
            "---\n# Source: probe/templates/odd.yaml\nkind: ConfigMap\nn: 1\n---\n# Source: probe/templates/odd.yaml\nkind: ConfigMap\nn: 3\n---\n# Source: probe/templates/odd.yaml\nkind: ConfigMap\nn: 5\n---\n# Source: probe/templates/odd.yaml\nkind: ConfigMap\nn: 7\n---\n# Source: probe/templates/odd.yaml\nkind: ConfigMap\nn: 9\n"
        );
    }
}
