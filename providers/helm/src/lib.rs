//! The `helm` provider: Helm releases (`helm_release`) through the helm CLI, marked with this
//! stack's owner label.

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ProviderTypes,
    ReadResourcesRequest, ReadResourcesResponse, ResourceMode, Schema, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::family::{Factory, Family};
use gpustack_provider_sdk::objects::strip_nulls;
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::Arc;

mod schema;
mod set;
mod template;

pub use schema::{CONFIG_REFUSED, RELEASE_REFUSED, Refusal, RefusedWhen, TEMPLATE_REFUSED};

/// Helm releases through the `helm` CLI.
pub(crate) struct Helm;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Helm))
}

#[async_trait::async_trait]
impl Family for Helm {
    /// A release is imported by `namespace/name`; Terraform records no identity of its own.
    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<gpustack_protocol::TerraformTakeover, &'static str>> {
        if type_name != "helm_release" {
            return None;
        }
        let text = |key: &str| {
            attributes
                .get(key)
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(name) = text("name") else {
            return Some(Err("it records no release name"));
        };
        let namespace = text("namespace").unwrap_or("default");
        Some(Ok(gpustack_protocol::TerraformTakeover {
            id: format!("{namespace}/{name}"),
            uid: None,
        }))
    }

    /// A release of the GPU Operator chart is reviewed by its values, `set` and `set_list`
    /// applied as helm applies them.
    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        let (type_name, before, after) = (change.type_name, change.before, change.after);
        if type_name != "helm_release" {
            return None;
        }
        let with_values = |state: &Value| {
            let mut state = state.clone();
            let values = values_of(&state);
            set(&mut state, "values", values);
            state
        };
        let before = before.map(with_values);
        let after = after.map(with_values);
        let mut reviewed = gpustack_protocol::Reviewed::default();
        match &after {
            Some(planned) => {
                reviewed.facts.extend(chart_fact(planned, before.as_ref()));
                if is_operator_chart(planned) && reviewed.facts.is_empty() {
                    reviewed.diagnostics.push(
                        Diagnostic::warning(
                            "GPU Operator values not known",
                            "The release's values are known only at apply, so its GPU settings are not checked and its capacity is not predicted.",
                        )
                        .with_attribute("values"),
                    );
                }
            }
            None => {
                let removed = before.as_ref().and_then(|b| chart_fact(b, Some(b)));
                reviewed.facts.extend(
                    removed
                        .as_ref()
                        .and_then(gpustack_protocol::GpuFact::removed),
                );
            }
        }
        Some(reviewed)
    }

    fn schema(&self) -> ProviderSchema {
        ProviderSchema {
            name: "helm".into(),
            config: schema::config(),
            resources: [("helm_release".to_owned(), schema::release())].into(),
            data_sources: [("helm_template".to_owned(), schema::template())].into(),
        }
    }

    fn types(&self) -> ProviderTypes {
        ProviderTypes {
            name: "helm".into(),
            resources: vec!["helm_release".into()],
            data_sources: vec!["helm_template".into()],
        }
    }

    fn config(&self) -> Schema {
        schema::config()
    }

    fn type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        match (mode, type_name) {
            (ResourceMode::Managed, "helm_release") => Some(schema::release()),
            (ResourceMode::Data, "helm_template") => Some(schema::template()),
            _ => None,
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            schema::check_refused(check, schema::CONFIG_REFUSED);
            check.one_of(
                "helm_driver",
                &[
                    "secret",
                    "secrets",
                    "configmap",
                    "configmaps",
                    "memory",
                    "sql",
                ],
            );
            return;
        }
        let refused = if type_name == "helm_template" {
            schema::TEMPLATE_REFUSED
        } else {
            schema::RELEASE_REFUSED
        };
        schema::check_refused(check, refused);
        check_timeout(check);
        if let Some(read) = check.str("timeouts.read")
            && go_duration(read).is_none()
        {
            check.error(
                "timeouts.read",
                "Invalid timeout",
                format!("\"{read}\" is not a duration such as \"5m\" or \"1h30m\"."),
            );
        }
        for kind in ["set", "set_list", "set_sensitive"] {
            let count = check
                .get(kind)
                .and_then(Value::as_list)
                .map_or(0, <[Value]>::len);
            for i in 0..count {
                if let Some(name) = check.str(&format!("{kind}[{i}].name"))
                    && let Err(why) = set::parse_path(name)
                {
                    check.error(
                        &format!("{kind}[{i}].name"),
                        "Invalid value path",
                        format!("\"{name}\" {why}: a path is keys separated by dots (a dot inside a key escaped as \\.), with list indexes as [N]."),
                    );
                }
                check.one_of(&format!("{kind}[{i}].type"), &["auto", "string"]);
            }
        }
        if let Some(values) = check.get("values").filter(|v| v.is_wholly_known())
            && let Err((i, why)) = chart_values(values)
        {
            check.error(
                &format!("values[{i}]"),
                "Invalid chart values",
                format!("values[{i}] {why}. values is an object of chart values, or a list of YAML documents merged in order."),
            );
        }
        if let Some(name) = check.str("name")
            && (name.is_empty()
                || name.len() > 53
                || !gpustack_provider_sdk::check::is_dns_label(name))
        {
            check.error(
                "name",
                "Invalid release name",
                format!("\"{name}\" must be a DNS label of at most 53 characters."),
            );
        }
    }

    /// A release is its name in its namespace.
    fn identity(&self, _: &str, state: &Value) -> Option<String> {
        Some(format!(
            "helm:{}/{}",
            namespace_of(state),
            text(state, "name")?
        ))
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        HelmCli::find(config)
            .await
            .map(|cli| Arc::new(cli) as Arc<dyn Provider>)
            .map_err(|d| vec![d])
    }
}

/// The provider configured: a helm binary and the cluster it talks to.
struct HelmCli {
    binary: PathBuf,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    /// 3 or 4: Helm 4 renamed --atomic to --rollback-on-failure.
    major: u32,
    /// Flags every helm command takes (`--debug`, `--registry-config`, ...).
    global: Vec<String>,
    /// Environment of every helm command (`HELM_DRIVER`, `HELM_PLUGINS`, ...).
    env: Vec<(String, String)>,
    /// Files the configuration was written into (a kubeconfig, a registry config), kept for
    /// as long as helm may read them.
    _files: Vec<tempfile::NamedTempFile>,
    /// The live cluster's GPU facts, read once, for the GPU model of a stack whose GPU
    /// settings are a GPU Operator release's values (no other object may read the nodes).
    gpu_cluster: tokio::sync::OnceCell<Result<gpustack_protocol::ClusterFact, String>>,
    /// The cluster's namespaces, read once per plan by the first install.
    namespaces: tokio::sync::OnceCell<Result<gpustack_cluster::Namespaces, String>>,
    /// The plan was told, once, that the namespaces could not be read.
    namespaces_warned: std::sync::atomic::AtomicBool,
}

const COMPUTED: [&str; 6] = [
    "revision",
    "status",
    "app_version",
    "first_deployed",
    "metadata",
    "manifest",
];

/// Terraform's defaults of the flags whose default is not false: an unset `wait` waits, as
/// in Terraform's helm provider.
const DEFAULTS: [(&str, bool); 1] = [("wait", true)];

/// `state` with Terraform's default in every flag of `DEFAULTS` left unset, and no
/// write-only paths where it records none (a state imported, or written before `set_wo`).
fn with_defaults(state: &Value) -> Value {
    let mut state = state.clone();
    for (name, default) in DEFAULTS {
        if attribute(&state, name).is_none_or(Value::is_null) {
            set(&mut state, name, Value::Bool(default));
        }
    }
    if attribute(&state, "set_wo_paths").is_none_or(Value::is_null) {
        set(&mut state, "set_wo_paths", Value::List(Vec::new()));
    }
    state
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// The release's values as configured, `set` and `set_list` applied, in the shape `helm get
/// values -o json` answers (`set_sensitive` stays out: the state never holds it).
fn values_of(state: &Value) -> Value {
    let sets_known = ["set", "set_list"]
        .iter()
        .all(|k| attribute(state, k).is_none_or(Value::is_wholly_known));
    match attribute(state, "values") {
        Some(v) if !v.is_wholly_known() || !sets_known => Value::Unknown,
        Some(v) => match chart_values(v) {
            Ok(mut values) => {
                set::apply_sets(&mut values, state);
                Value::from_json(&strip_nulls(&values))
            }
            Err(_) => v.clone(),
        },
        None if !sets_known => Value::Unknown,
        None => {
            let mut values = Json::Object(Default::default());
            set::apply_sets(&mut values, state);
            Value::from_json(&strip_nulls(&values))
        }
    }
}

/// The files helm reads a release's values from: the values (with `set` and `set_list`), and
/// the `set_sensitive` values in a file of their own, which nothing else reads.
fn values_files(
    config: &Value,
) -> Result<(tempfile::NamedTempFile, Option<tempfile::NamedTempFile>), String> {
    let write = |json: &Json| -> Result<tempfile::NamedTempFile, String> {
        let mut file = tempfile::Builder::new()
            .prefix("gpustack-values-")
            .suffix(".json")
            .tempfile()
            .map_err(|e| format!("cannot write the values file: {e}"))?;
        std::io::Write::write_all(&mut file, json.to_string().as_bytes())
            .map_err(|e| format!("cannot write the values file: {e}"))?;
        Ok(file)
    };
    let values = write(&values_of(config).to_json())?;
    let sensitive = set::sensitive_values(config)
        .map(|json| write(&json))
        .transpose()?;
    Ok((values, sensitive))
}

/// `timeout`: a number of seconds (Terraform's form) or a duration string (gpustack's).
fn timeout_arg(state: &Value) -> Option<String> {
    let timeout = attribute(state, "timeout")?;
    if let Some(seconds) = timeout.as_number() {
        return Some(format!("{}s", seconds as u64));
    }
    timeout.as_str().map(str::to_owned)
}

fn check_timeout(check: &mut Checker<'_>) {
    let Some(timeout) = check.get("timeout") else {
        return;
    };
    let valid = match (timeout.as_number(), timeout.as_str()) {
        (Some(n), _) => n > 0.0 && n.fract() == 0.0,
        (_, Some(text)) => is_duration(text),
        _ => false,
    };
    if !valid {
        check.error(
            "timeout",
            "Invalid timeout",
            "timeout is a whole number of seconds (timeout = 600) or a duration such as \"10m\" or \"1h30m\".".into(),
        );
    }
}

/// A Go duration (`"1h30m"`, `"90s"`) as a `Duration`.
fn go_duration(text: &str) -> Option<std::time::Duration> {
    if !is_duration(text) {
        return None;
    }
    let mut rest = text;
    let mut seconds = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, scale) = [
            ("ms", 1e-3),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("ns", 1e-9),
            ("h", 3600.0),
            ("m", 60.0),
            ("s", 1.0),
        ]
        .into_iter()
        .find(|(u, _)| rest.starts_with(u))?;
        rest = &rest[unit.len()..];
        seconds += n * scale;
    }
    std::time::Duration::try_from_secs_f64(seconds).ok()
}

/// A Go duration as helm's --timeout takes it: numbers each followed by h, m, s, ms, us or ns.
fn is_duration(text: &str) -> bool {
    let mut rest = text;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "us", "µs", "ns", "h", "m", "s"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

/// Chart values given as an object, or as Terraform's helm provider takes them: a list of
/// YAML documents (`[file("values.yaml"), yamlencode({...})]`) merged in order as `helm -f a
/// -f b` merges them, maps key by key and anything else replaced by the later document.
/// `Err((index, why))` for a document that is not a YAML mapping.
fn chart_values(values: &Value) -> Result<Json, (usize, String)> {
    let Some(documents) = values.as_list() else {
        return Ok(values.to_json());
    };
    let mut merged = Json::Object(Default::default());
    let mut budget = gpustack_protocol::limits::DecodeCost::default();
    for (i, document) in documents.iter().enumerate() {
        let Some(text) = document.as_str() else {
            return Err((i, "is not a string of YAML".into()));
        };
        let parsed = gpustack_cluster::yaml::from_str_within(text, &mut budget)
            .map_err(|e| (i, format!("is not YAML: {e}")))?;
        match parsed {
            Json::Null => {}
            Json::Object(_) => merge_values(&mut merged, parsed),
            _ => return Err((i, "is YAML but not a mapping of chart values".into())),
        }
    }
    Ok(merged)
}

fn merge_values(into: &mut Json, from: Json) {
    match (into, from) {
        (Json::Object(into), Json::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge_values(existing, value)
                    }
                    _ => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

/// Whether the release installs the chart named `name` (by name, path or archive).
fn installs_chart(planned: &Value, name: &str) -> bool {
    text(planned, "chart").is_some_and(|chart| {
        chart
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(chart)
            .starts_with(name)
    })
}

/// The release as Helm names it: `namespace/name`.
fn release_of(planned: &Value) -> String {
    format!(
        "{}/{}",
        namespace_of(planned),
        text(planned, "name").unwrap_or_default()
    )
}

/// The live cluster among a plan's GPU facts, if it was read.
fn live_cluster(facts: &[gpustack_protocol::GpuFact]) -> Option<&gpustack_protocol::ClusterFact> {
    facts.iter().find_map(|f| match f {
        gpustack_protocol::GpuFact::Cluster(c) => Some(c),
        _ => None,
    })
}

/// The release's repository credentials and the helm flags that pass them.
const REPOSITORY_FLAGS: &[(&str, &str)] = &[
    ("repository_username", "--username"),
    ("repository_password", "--password"),
    ("repository_key_file", "--key-file"),
    ("repository_cert_file", "--cert-file"),
    ("repository_ca_file", "--ca-file"),
];

/// A release of NVIDIA's GPU Operator chart: its values are the ClusterPolicy's settings, for
/// the GPU model (the chart renders `cluster-policy` from them).
fn is_operator_chart(planned: &Value) -> bool {
    installs_chart(planned, "gpu-operator")
}

/// An install of the GPU Operator into a cluster that already runs one, installed by another
/// release (or not by Helm): helm refuses the ClusterPolicy and the other cluster-scoped
/// objects the other owns, and two operators would fight over the nodes.
fn second_operator(planned: &Value, facts: &[gpustack_protocol::GpuFact]) -> Option<Diagnostic> {
    let cluster = live_cluster(facts)?;
    cluster.policy.as_ref()?;
    let this = release_of(planned);
    if cluster.policy_release.as_deref() == Some(this.as_str()) {
        return None;
    }
    let owner = match &cluster.policy_release {
        Some(release) => format!("belongs to the Helm release {release}"),
        None => "was not installed by Helm".to_owned(),
    };
    let values = attribute(planned, "values").map(Value::to_json);
    let gpu_cluster = values
        .as_ref()
        .and_then(|v| v.pointer("/gpuCluster/deployCR"))
        .and_then(Json::as_bool)
        == Some(true);
    let dra = if gpu_cluster {
        " Its values deploy a GPUCluster (GPU Operator's DRA stack) beside that ClusterPolicy: a cluster has a GPUCluster or a ClusterPolicy, never both, and there is no in-place migration."
    } else {
        ""
    };
    Some(Diagnostic::error(
        "Second GPU Operator",
        format!(
            "This release installs the GPU Operator as {this}, but the cluster already runs one: its ClusterPolicy cluster-policy {owner}. Helm refuses to take over the other's cluster-scoped objects, and two operators would fight over the nodes.{dra} Manage the installed one here (import it: gpustack import ADDRESS NAMESPACE/NAME), or uninstall it first."
        ),
    ))
}

/// An install of NVIDIA's DRA driver into a cluster where another release (or something other
/// than Helm) already created its DeviceClass `gpu.nvidia.com`: helm refuses to take over the
/// other's cluster-scoped objects (DeviceClasses, ClusterRoles), and two drivers would publish
/// the same GPUs twice.
fn second_dra_driver(planned: &Value, facts: &[gpustack_protocol::GpuFact]) -> Option<Diagnostic> {
    let cluster = live_cluster(facts)?;
    let owner = cluster.dra_driver_release.as_deref()?;
    let this = release_of(planned);
    if owner == this {
        return None;
    }
    let owner = if owner.is_empty() {
        "was not created by Helm (a GPUCluster's operator, or by hand)".to_owned()
    } else {
        format!("belongs to the Helm release {owner}")
    };
    Some(Diagnostic::error(
        "Second DRA driver",
        format!(
            "This release installs NVIDIA's DRA driver as {this}, but the cluster already runs one: its DeviceClass gpu.nvidia.com {owner}. Helm refuses to take over the other's cluster-scoped objects (its DeviceClasses and ClusterRoles), and two drivers would publish the same GPUs twice. Manage the installed one here (import it: gpustack import ADDRESS NAMESPACE/NAME), or uninstall it first."
        ),
    ))
}

/// A release of NVIDIA's standalone device plugin chart (NVIDIA/k8s-device-plugin) where a
/// device plugin already serves the GPU nodes — the GPU Operator's, or another release's: two
/// plugins register the same `nvidia.com/gpu` with each kubelet, and each takes the other's
/// registration. A release whose values place it (`nodeSelector`, `affinity`) is left to
/// the GPU model: only one that reaches every GPU node (the chart's default) is refused here.
fn second_device_plugin(
    planned: &Value,
    facts: &[gpustack_protocol::GpuFact],
) -> Option<Diagnostic> {
    let cluster = live_cluster(facts)?;
    let values = values_of(planned);
    if !values.is_wholly_known() {
        return None;
    }
    let values = values.to_json();
    let placed = ["nodeSelector", "affinity"].iter().any(|key| {
        values
            .get(*key)
            .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    });
    if placed {
        return None;
    }
    let this = release_of(planned);
    let operator_plugin = cluster.policy.as_ref().is_some_and(|spec| {
        spec.pointer("/devicePlugin/enabled")
            .and_then(Json::as_bool)
            != Some(false)
    });
    let other = if operator_plugin {
        "the GPU Operator's device plugin (ClusterPolicy cluster-policy, devicePlugin.enabled)"
            .to_owned()
    } else {
        let others: Vec<&String> = cluster
            .device_plugin_releases
            .iter()
            .filter(|r| **r != this)
            .collect();
        if others.is_empty() {
            return None;
        }
        format!(
            "the device plugin of {}",
            others
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(Diagnostic::error(
        "Second device plugin",
        format!(
            "This release installs NVIDIA's device plugin as {this} on every GPU node (its chart's default placement), and {other} already serves them: two plugins register nvidia.com/gpu with each kubelet, which keeps only the last, so the GPUs are advertised and handed out by whichever registered last. Keep one device plugin per node: place this one with nodeSelector or affinity on nodes the other does not serve, or turn the other off."
        ),
    ))
}

/// The release installs NVIDIA's standalone device plugin (NVIDIA/k8s-device-plugin).
fn is_device_plugin_chart(planned: &Value) -> bool {
    installs_chart(planned, "nvidia-device-plugin")
}

/// The release installs NVIDIA's DRA driver for GPUs.
fn is_dra_driver_chart(planned: &Value) -> bool {
    installs_chart(planned, "dra-driver-nvidia-gpu")
}

/// The GPU fact of a release of one of NVIDIA's charts the GPU model reads: the GPU
/// Operator's settings, or the DRA driver's values.
fn chart_fact(planned: &Value, prior: Option<&Value>) -> Option<gpustack_protocol::GpuFact> {
    if is_dra_driver_chart(planned) {
        let values = attribute(planned, "values").filter(|v| v.is_wholly_known())?;
        return Some(gpustack_protocol::GpuFact::DraDriver(
            gpustack_protocol::DraDriverFact {
                source: gpustack_protocol::DraDriverSource::Chart,
                release: release_of(planned),
                values: Some(values.to_json()),
                values_before: prior
                    .and_then(|p| attribute(p, "values"))
                    .map(Value::to_json),
                attribute: gpustack_protocol::path(["values"]),
            },
        ));
    }
    if !is_operator_chart(planned) {
        return None;
    }
    let values = attribute(planned, "values").filter(|v| v.is_wholly_known())?;
    Some(gpustack_protocol::GpuFact::Operator(
        gpustack_protocol::OperatorFact {
            source: gpustack_protocol::OperatorSource::HelmValues,
            namespace: Some(namespace_of(planned)),
            settings: Some(values.to_json()),
            settings_before: prior
                .and_then(|p| attribute(p, "values"))
                .map(Value::to_json),
            attribute: gpustack_protocol::path(["values"]),
        },
    ))
}

/// Terraform's `metadata` of a release, from `helm status` and its values.
fn metadata_of(status: &Json, values: &Json) -> Value {
    let text = |pointer: &str| {
        status
            .pointer(pointer)
            .and_then(Json::as_str)
            .map_or(Value::Null, Value::string)
    };
    // Terraform's first_deployed and last_deployed (Unix seconds) are not in it: when the
    // release was first installed is the resource's own `first_deployed`.
    Value::Object(
        [
            ("name", text("/name")),
            (
                "revision",
                status
                    .get("version")
                    .and_then(Json::as_f64)
                    .map_or(Value::Null, Value::number),
            ),
            ("namespace", text("/namespace")),
            ("chart", text("/chart/metadata/name")),
            ("version", text("/chart/metadata/version")),
            ("app_version", text("/chart/metadata/appVersion")),
            ("values", Value::string(values.to_string())),
            ("notes", text("/info/notes")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

/// A chart from a directory or archive: helm ignores `version` for it, so must drift.
fn is_local_chart(chart: &str) -> bool {
    chart.starts_with('.') || chart.starts_with('/') || chart.ends_with(".tgz")
}

fn namespace_of(state: &Value) -> String {
    text(state, "namespace").unwrap_or("default").to_owned()
}

impl HelmCli {
    async fn find(config: &Value) -> Result<Self, Diagnostic> {
        let binary = match text(config, "helm_binary") {
            Some(path) => PathBuf::from(path),
            None => on_path("helm").ok_or_else(|| {
                Diagnostic::error(
                    "helm is not installed",
                    "The helm provider drives Helm through its CLI, and no `helm` is on PATH. Install Helm 3 or 4 (https://helm.sh/docs/intro/install/), or set helm_binary in the provider \"helm\" block.",
                )
            })?,
        };
        let output = tokio::process::Command::new(&binary)
            .args(["version", "--template", "{{.Version}}"])
            .output()
            .await
            .map_err(|e| {
                Diagnostic::error(
                    "Cannot run helm",
                    format!("{}: {e}. Install Helm 3 or 4 (https://helm.sh/docs/intro/install/) or fix helm_binary.", binary.display()),
                )
            })?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if !(3..=4).contains(&major) {
            return Err(Diagnostic::error(
                "Unsupported helm version",
                format!(
                    "{} reports version \"{version}\"; gpustack works with Helm 3 and 4.",
                    binary.display()
                ),
            ));
        }
        let mut cli = Self {
            binary,
            // Without config_path, helm reads $KUBECONFIG (every file of it) itself.
            kubeconfig: text(config, "config_path")
                .map(gpustack_connect::kubernetes::home_expanded),
            context: text(config, "context").map(str::to_owned),
            major,
            global: Vec::new(),
            env: Vec::new(),
            _files: Vec::new(),
            gpu_cluster: tokio::sync::OnceCell::new(),
            namespaces: tokio::sync::OnceCell::new(),
            namespaces_warned: std::sync::atomic::AtomicBool::new(false),
        };
        cli.terraform_config(config).await?;
        Ok(cli)
    }

    /// Writes a kubeconfig document built for helm (the CLI reads one file; JSON is YAML) and
    /// points every client of this provider at it.
    fn adopt_kubeconfig(
        &mut self,
        document: Result<serde_json::Value, gpustack_connect::kubernetes::ConnectError>,
    ) -> Result<(), Box<Diagnostic>> {
        let document = document.map_err(|e| {
            Diagnostic::error("Cannot configure helm", gpustack_protocol::error_chain(&e))
        })?;
        let file = write_file("kubeconfig", &document.to_string())?;
        self.kubeconfig = Some(file.path().to_owned());
        self._files.push(file);
        Ok(())
    }

    /// Terraform's helm provider configuration: the `kubernetes` block (a kubeconfig written
    /// from its credentials when it has any), registries, and the helm CLI's own settings.
    // Long by design: one paragraph per part of the helm provider's configuration
    // (kubernetes credentials, registries, CLI settings), each writing what helm reads.
    async fn terraform_config(&mut self, config: &Value) -> Result<(), Diagnostic> {
        // The kubernetes block, with the KUBE_* variables filling what it leaves unset.
        let kubernetes = attribute(config, "kubernetes")
            .map(gpustack_cluster::with_environment)
            .or_else(|| {
                let from_environment = gpustack_cluster::with_environment(&Value::Null);
                from_environment
                    .as_object()
                    .is_some_and(|o| !o.is_empty())
                    .then_some(from_environment)
            });
        if let Some(kubernetes) = kubernetes.as_ref() {
            let paths: Vec<&str> = attribute(kubernetes, "config_paths")
                .and_then(Value::as_list)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if let Some(path) = text(kubernetes, "config_path") {
                self.kubeconfig = Some(gpustack_connect::kubernetes::home_expanded(path));
            } else if let [path] = paths[..] {
                self.kubeconfig = Some(gpustack_connect::kubernetes::home_expanded(path));
            } else if !paths.is_empty() {
                // Merged as the kubernetes provider merges them, into the one file every
                // client of this provider reads (the helm CLI, the namespaces, the GPU model).
                let settings = gpustack_connect::kubernetes::KubeSettings {
                    config_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
                    ..Default::default()
                };
                let merged = gpustack_connect::kubernetes::merged_kubeconfig(&settings);
                self.adopt_kubeconfig(merged).map_err(|e| *e)?;
            }
            if let Some(context) = text(kubernetes, "config_context") {
                self.context = Some(context.to_owned());
            }
            // The helm CLI chooses a context only: a cluster or user to put in its place
            // goes into a kubeconfig of its own, with that context made current.
            let cluster = text(kubernetes, "config_context_cluster");
            let user = text(kubernetes, "config_context_auth_info");
            if cluster.is_some() || user.is_some() {
                let settings = gpustack_connect::kubernetes::KubeSettings {
                    config_paths: self
                        .kubeconfig
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect(),
                    context: self.context.clone(),
                    cluster: cluster.map(str::to_owned),
                    user: user.map(str::to_owned),
                    ..Default::default()
                };
                let selected = gpustack_connect::kubernetes::selected_kubeconfig(&settings);
                self.adopt_kubeconfig(selected).map_err(|e| *e)?;
                self.context = None;
            }
            if let Some(kubeconfig) = gpustack_cluster::terraform_kubeconfig(kubernetes) {
                // JSON is YAML: helm and the GPU model's client read it as a kubeconfig.
                self.adopt_kubeconfig(Ok(kubeconfig)).map_err(|e| *e)?;
                self.context = None;
            }
        }
        if attribute(config, "debug").and_then(Value::as_bool) == Some(true) {
            self.global.push("--debug".into());
        }
        for (name, flag) in [
            ("registry_config_path", "--registry-config"),
            ("repository_config_path", "--repository-config"),
            ("repository_cache", "--repository-cache"),
        ] {
            if let Some(value) = text(config, name) {
                self.global.extend([flag.into(), value.into()]);
            }
        }
        for (name, flag) in [("burst_limit", "--burst-limit"), ("qps", "--qps")] {
            if let Some(n) = attribute(config, name).and_then(Value::as_number) {
                self.global.extend([flag.into(), format!("{n}")]);
            }
        }
        for (name, variable) in [
            ("plugins_path", "HELM_PLUGINS"),
            ("helm_driver", "HELM_DRIVER"),
        ] {
            if let Some(value) = text(config, name) {
                self.env.push((variable.into(), value.into()));
            }
        }
        let registries: Vec<&Value> = ["registry", "registries"]
            .into_iter()
            .filter_map(|k| attribute(config, k).and_then(Value::as_list))
            .flatten()
            .collect();
        if !registries.is_empty() && text(config, "registry_config_path").is_none() {
            // Logins of this stack's own, never written into the user's registry config.
            let file = write_file("registry config", "{}").map_err(|e| *e)?;
            self.global.extend([
                "--registry-config".into(),
                file.path().display().to_string(),
            ]);
            self._files.push(file);
        }
        for registry in registries {
            let url = text(registry, "url").unwrap_or_default();
            let host = url.trim_start_matches("oci://");
            let mut command = tokio::process::Command::new(&self.binary);
            command
                .args(["registry", "login", host, "--password-stdin", "--username"])
                .arg(text(registry, "username").unwrap_or_default())
                .args(&self.global)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let login = async {
                let mut child = command.spawn()?;
                if let Some(mut stdin) = child.stdin.take() {
                    tokio::io::AsyncWriteExt::write_all(
                        &mut stdin,
                        text(registry, "password").unwrap_or_default().as_bytes(),
                    )
                    .await?;
                }
                child.wait_with_output().await
            };
            match login.await {
                Ok(out) if out.status.success() => {}
                Ok(out) => {
                    return Err(Diagnostic::error(
                        "Cannot log in to the registry",
                        format!("{host}: {}", String::from_utf8_lossy(&out.stderr).trim()),
                    ));
                }
                Err(e) => {
                    return Err(Diagnostic::error(
                        "Cannot log in to the registry",
                        format!("{host}: {e}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The install/upgrade flags of Terraform's `helm_release` arguments. `helm upgrade
    /// --install` hands `--force` on to the install of a new release, where it forces the
    /// update of objects a release adopts; Terraform's provider passes `force_update` to
    /// upgrades only, so an install (`installing`) goes without it.
    fn release_flags(&self, planned: &Value, installing: bool) -> Vec<String> {
        let on = |name: &str| attribute(planned, name).and_then(Value::as_bool) == Some(true);
        let mut args: Vec<String> = Vec::new();
        let force = if self.major >= 4 {
            "--force-replace"
        } else {
            "--force"
        };
        for (name, flag) in [
            ("devel", "--devel"),
            ("verify", "--verify"),
            ("pass_credentials", "--pass-credentials"),
            ("wait_for_jobs", "--wait-for-jobs"),
            ("skip_crds", "--skip-crds"),
            ("disable_webhooks", "--no-hooks"),
            ("disable_openapi_validation", "--disable-openapi-validation"),
            ("render_subchart_notes", "--render-subchart-notes"),
            ("dependency_update", "--dependency-update"),
            ("cleanup_on_fail", "--cleanup-on-fail"),
            ("force_update", force),
            ("take_ownership", "--take-ownership"),
        ] {
            if on(name) && !(installing && name == "force_update") {
                args.push(flag.into());
            }
        }
        for (name, flag) in [("keyring", "--keyring"), ("description", "--description")]
            .iter()
            .chain(REPOSITORY_FLAGS)
        {
            if let Some(value) = text(planned, name) {
                args.extend([(*flag).into(), value.into()]);
            }
        }
        if let Some(max) = attribute(planned, "max_history").and_then(Value::as_number) {
            args.extend(["--history-max".into(), format!("{}", max as u64)]);
        }
        if let Some(postrender) = attribute(planned, "postrender")
            && let Some(binary) = text(postrender, "binary_path")
        {
            args.extend(["--post-renderer".into(), binary.into()]);
            for arg in attribute(postrender, "args")
                .and_then(Value::as_list)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
            {
                args.push(format!("--post-renderer-args={arg}"));
            }
        }
        args
    }

    /// The live cluster's GPU facts, or a warning that the plan goes on without them.
    async fn push_cluster(
        &self,
        facts: &mut Vec<gpustack_protocol::GpuFact>,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let read = self
            .gpu_cluster
            .get_or_init(|| async {
                gpustack_cluster::gpu_cluster(
                    self.kubeconfig.as_deref().and_then(|p| p.to_str()),
                    self.context.as_deref(),
                )
                .await
                .map_err(|e| gpustack_protocol::error_chain(&e))
            })
            .await;
        match read {
            Ok(cluster) => facts.push(gpustack_protocol::GpuFact::Cluster(cluster.clone())),
            Err(why) => diagnostics.push(gpustack_cluster::gpu_nodes_not_read(why)),
        }
    }

    /// What an install needs and makes: its namespace, made by `create_namespace` or needed
    /// from the cluster. Nothing, and a warning (once), when the namespaces cannot be read.
    async fn order(
        &self,
        planned: &Value,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> gpustack_protocol::Order {
        let mut order = gpustack_protocol::Order::default();
        let namespaces = self
            .namespaces
            .get_or_init(|| async {
                gpustack_cluster::namespaces_at(
                    self.kubeconfig.as_deref().and_then(|p| p.to_str()),
                    self.context.as_deref(),
                )
                .await
                .map_err(|e| gpustack_protocol::error_chain(&e))
            })
            .await;
        let namespaces = match namespaces {
            Ok(namespaces) => namespaces,
            Err(why) => {
                gpustack_cluster::warn_namespaces_not_read_once(
                    &self.namespaces_warned,
                    why,
                    diagnostics,
                );
                return order;
            }
        };
        let namespace = namespace_of(planned);
        if attribute(planned, "create_namespace").and_then(Value::as_bool) == Some(true) {
            order.makes.push(namespaces.key(&namespace));
        } else if !namespaces.names.contains(&namespace) {
            order.needs.push(gpustack_protocol::Prerequisite {
                key: namespaces.key(&namespace),
                describe: format!("the namespace {namespace}"),
            });
        }
        order
    }

    /// Runs helm against the configured cluster; stdout on success, a diagnostic with helm's
    /// own message otherwise.
    async fn run(&self, args: &[String]) -> Result<String, String> {
        let output = self.output(args).await?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// Runs helm against the configured cluster, whatever it answers.
    async fn output(&self, args: &[String]) -> Result<std::process::Output, String> {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(&self.global)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(kubeconfig) = &self.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        if let Some(context) = &self.context {
            command.args(["--kube-context", context]);
        }
        command
            .args(args)
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))
    }

    /// Whether the repository lists the chart's `version`, asked with helm's own lookup
    /// (`helm show chart --repo --version`, the release's repository credentials): the
    /// error where it answers that it does not; nothing where it does not answer.
    async fn version_listed(&self, planned: &Value) -> Option<Diagnostic> {
        let chart = text(planned, "chart")?;
        let version = text(planned, "version")?;
        let repository = text(planned, "repository");
        let remote = repository.is_some() || chart.starts_with("oci://");
        if !remote {
            return None;
        }
        let mut args: Vec<String> = vec![
            "show".into(),
            "chart".into(),
            chart.into(),
            "--version".into(),
            version.into(),
        ];
        if let Some(repository) = repository {
            args.extend(["--repo".into(), repository.into()]);
        }
        for (name, flag) in REPOSITORY_FLAGS {
            if let Some(value) = text(planned, name) {
                args.extend([(*flag).into(), value.into()]);
            }
        }
        let answer = tokio::time::timeout(std::time::Duration::from_secs(30), self.run(&args))
            .await
            .ok()?;
        let error = answer.err()?;
        // helm's repo lookup: `chart "X" version "Y" not found in URL repository`; OCI: a
        // manifest unknown for the tag.
        let missing = (error.contains("not found in") && error.contains("repository"))
            || error.contains("manifest unknown");
        missing.then(|| {
            Diagnostic::error(
                "Chart version not in the repository",
                format!(
                    "The repository does not list version {version} of {chart}: helm would fail the install. Helm says: {error}"
                ),
            )
            .with_attribute("version")
        })
    }

    /// `lint = true`: `helm lint` of the chart with the release's values, at plan, as the
    /// Terraform provider lints it; a chart from a repository is pulled first. Helm's
    /// findings when it fails.
    async fn lint(&self, planned: &Value) -> Result<(), String> {
        let chart = text(planned, "chart").unwrap_or_default().to_owned();
        let pulled = tempfile::tempdir().map_err(|e| format!("cannot make a directory: {e}"))?;
        let local = std::path::Path::new(&chart);
        let path = if text(planned, "repository").is_none() && local.exists() {
            local.to_path_buf()
        } else {
            let mut args: Vec<String> = vec![
                "pull".into(),
                chart.clone(),
                "--untar".into(),
                "--untardir".into(),
                pulled.path().display().to_string(),
            ];
            if let Some(repository) = text(planned, "repository") {
                args.extend(["--repo".into(), repository.into()]);
            }
            if let Some(version) = text(planned, "version") {
                args.extend(["--version".into(), version.into()]);
            }
            self.run(&args).await?;
            std::fs::read_dir(pulled.path())
                .ok()
                .and_then(|mut entries| entries.next())
                .and_then(Result::ok)
                .map(|entry| entry.path())
                .ok_or_else(|| format!("helm pull {chart} left no chart"))?
        };
        let (values, sensitive) = values_files(planned)?;
        let mut args: Vec<String> = vec![
            "lint".into(),
            path.display().to_string(),
            "-f".into(),
            values.path().display().to_string(),
        ];
        if let Some(sensitive) = &sensitive {
            args.extend(["-f".into(), sensitive.path().display().to_string()]);
        }
        let output = self.output(&args).await?;
        if output.status.success() {
            return Ok(());
        }
        // Helm prints its findings on stdout and the summary on stderr.
        Err(format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }

    /// Whether this release carries this stack's mark (labels, which `helm list` filters on).
    async fn owned(&self, name: &str, namespace: &str, owner: &str) -> Result<bool, String> {
        if owner.is_empty() {
            return Ok(false);
        }
        let listed = self
            .run(&[
                "list".into(),
                "-n".into(),
                namespace.into(),
                "-l".into(),
                format!("{}={owner}", gpustack_protocol::OWNER_KEY),
                "--filter".into(),
                format!("^{}$", name.replace('.', "\\.")),
                "-a".into(),
                "-o".into(),
                "json".into(),
            ])
            .await?;
        let releases: Json = serde_json::from_str(listed.trim()).unwrap_or(Json::Null);
        Ok(releases.as_array().is_some_and(|r| !r.is_empty()))
    }

    /// A release as a state, from `namespace/name`: chart and version from its metadata,
    /// values as installed.
    async fn import(&self, id: &str) -> Result<Option<Value>, String> {
        let (namespace, name) = id
            .split_once('/')
            .ok_or_else(|| format!("\"{id}\" is not NAMESPACE/RELEASE"))?;
        let Some(metadata) = self
            .json_of(&["get", "metadata", name, "-n", namespace])
            .await?
        else {
            return Ok(None);
        };
        let field = |k: &str| {
            metadata
                .get(k)
                .and_then(Json::as_str)
                .map_or(Value::Null, Value::string)
        };
        let release = schema::release();
        let mut skeleton = Value::Object(
            release
                .attributes
                .keys()
                .chain(release.blocks.keys())
                .map(|k| (k.clone(), Value::Null))
                .collect(),
        );
        for (k, v) in [
            ("name", Value::string(name)),
            ("chart", field("chart")),
            ("version", field("version")),
            ("namespace", Value::string(namespace)),
            ("first_deployed", Value::Unknown),
        ] {
            set(&mut skeleton, k, v);
        }
        for block in ["set", "set_list", "set_sensitive"] {
            set(&mut skeleton, block, Value::List(Vec::new()));
        }
        // As the Terraform provider imports a release: with its defaults written out.
        self.live(&with_defaults(&skeleton)).await
    }

    /// What `helm ARGS -o json` says; `None` when the release is not installed.
    async fn json_of(&self, args: &[&str]) -> Result<Option<Json>, String> {
        let mut command: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        command.extend(["-o".to_owned(), "json".to_owned()]);
        let out = match self.run(&command).await {
            Ok(out) => out,
            Err(e) if e.contains("not found") => return Ok(None),
            Err(e) => return Err(e),
        };
        serde_json::from_str(out.trim())
            .map(Some)
            .map_err(|e| format!("helm {}: {e}", args[..2.min(args.len())].join(" ")))
    }

    /// The live release as state: `None` when it is not installed, or when the release of
    /// that name is another one than the state records (installed again since).
    /// Whether the release's name may be taken again (`helm install --replace`): its last
    /// revision was uninstalled with its history kept, or failed.
    async fn reusable(&self, name: &str, namespace: &str) -> bool {
        let status = self.json_of(&["status", name, "-n", namespace]).await;
        matches!(
            status
                .ok()
                .flatten()
                .as_ref()
                .and_then(|s| s.pointer("/info/status"))
                .and_then(Json::as_str),
            Some("uninstalled" | "failed")
        )
    }

    async fn live(&self, prior: &Value) -> Result<Option<Value>, String> {
        let name = text(prior, "name").unwrap_or_default().to_owned();
        let namespace = namespace_of(prior);
        let Some(status) = self.json_of(&["status", &name, "-n", &namespace]).await? else {
            return Ok(None);
        };
        let first_deployed = status
            .pointer("/info/first_deployed")
            .and_then(Json::as_str);
        if let Some(recorded) = text(prior, "first_deployed")
            && first_deployed != Some(recorded)
        {
            return Ok(None);
        }
        let values = self
            .run(&[
                "get".into(),
                "values".into(),
                name,
                "-n".into(),
                namespace,
                "-o".into(),
                "json".into(),
            ])
            .await?;
        let values: Json = serde_json::from_str(values.trim()).unwrap_or(Json::Null);
        let mut values = if values.is_null() {
            Json::Object(Default::default())
        } else {
            values
        };
        set::strip_sensitive(&mut values, prior);
        let mut state = prior.clone();
        // Learnt where it is unknown (an install, an import); a state that records none
        // (written before it was recorded) keeps none, or the refresh would report it as a
        // change made outside gpustack.
        if attribute(prior, "first_deployed").is_some_and(Value::is_unknown) {
            set(
                &mut state,
                "first_deployed",
                first_deployed.map_or(Value::Null, Value::string),
            );
        }
        set(&mut state, "values", Value::from_json(&values));
        set(&mut state, "metadata", metadata_of(&status, &values));
        if let Some(revision) = status.get("version").and_then(Json::as_f64) {
            set(&mut state, "revision", Value::number(revision));
        }
        if let Some(s) = status.pointer("/info/status").and_then(Json::as_str) {
            set(&mut state, "status", Value::string(s));
        }
        if let Some(v) = status
            .pointer("/chart/metadata/appVersion")
            .and_then(Json::as_str)
        {
            set(&mut state, "app_version", Value::string(v));
        }
        // A chart's version drifts only when it is another version: `24.9.0` and `v24.9.0`
        // are one, and a range (`~24.9`) is left to helm.
        if let Some(configured) = text(prior, "version")
            && !is_local_chart(text(prior, "chart").unwrap_or_default())
            && configured
                .trim_start_matches('v')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+')
            && let Some(v) = status
                .pointer("/chart/metadata/version")
                .and_then(Json::as_str)
            && v.trim_start_matches('v') != configured.trim_start_matches('v')
        {
            set(&mut state, "version", Value::string(v));
        }
        Ok(Some(state))
    }

    /// The arguments of `helm upgrade --install` for a planned release whose values are in
    /// the file `values` (and its `set_sensitive` values in `sensitive`).
    fn upgrade_args(
        &self,
        planned: &Value,
        installing: bool,
        owner: &str,
        values: &std::path::Path,
        sensitive: Option<&std::path::Path>,
    ) -> Vec<String> {
        let name = text(planned, "name").unwrap_or_default().to_owned();
        let namespace = namespace_of(planned);
        let mut args: Vec<String> = vec![
            "upgrade".into(),
            "--install".into(),
            name,
            text(planned, "chart").unwrap_or_default().into(),
            "-n".into(),
            namespace,
            "-f".into(),
            values.display().to_string(),
        ];
        // Values are exactly what the stack says, never merged with an earlier release's;
        // `reuse_values = true` merges the new values into the previous release's, and
        // `reset_values = false`, written out, asks for helm's own rule (the previous values
        // kept when the upgrade is given none), as Terraform's provider passes them to helm
        // (reset first).
        let flag = |name: &str| attribute(planned, name).and_then(Value::as_bool);
        match (flag("reset_values"), flag("reuse_values")) {
            (Some(true), _) => args.push("--reset-values".into()),
            (_, Some(true)) => args.push("--reuse-values".into()),
            (Some(false), _) => {}
            _ => args.push("--reset-values".into()),
        }
        if !owner.is_empty() {
            // This stack's mark on the release, for a run that finds it unrecorded.
            args.extend([
                "--labels".into(),
                format!("{}={owner}", gpustack_protocol::OWNER_KEY),
            ]);
        }
        if let Some(repository) = text(planned, "repository") {
            args.extend(["--repo".into(), repository.into()]);
        }
        if let Some(version) = text(planned, "version") {
            args.extend(["--version".into(), version.into()]);
        }
        if attribute(planned, "create_namespace").and_then(Value::as_bool) == Some(true) {
            args.push("--create-namespace".into());
        }
        if attribute(planned, "atomic").and_then(Value::as_bool) == Some(true) {
            args.push(
                if self.major >= 4 {
                    "--rollback-on-failure"
                } else {
                    "--atomic"
                }
                .into(),
            );
        }
        // Unset (a state written before the default was Terraform's) waits too.
        if attribute(planned, "wait").and_then(Value::as_bool) != Some(false) {
            args.push("--wait".into());
        }
        if let Some(timeout) = timeout_arg(planned) {
            args.extend(["--timeout".into(), timeout]);
        }
        if let Some(file) = sensitive {
            // After the values file: set_sensitive overrides, as the helm provider's does.
            args.extend(["-f".into(), file.display().to_string()]);
        }
        args.extend(self.release_flags(planned, installing));
        args
    }

    /// Installs or upgrades the release (`installing`: the state records none yet).
    async fn upgrade(
        &self,
        planned: &Value,
        installing: bool,
        owner: &str,
    ) -> Result<Value, String> {
        let (values_file, sensitive_file) = values_files(planned)?;
        let args = self.upgrade_args(
            planned,
            installing,
            owner,
            values_file.path(),
            sensitive_file.as_ref().map(tempfile::NamedTempFile::path),
        );
        self.run(&args).await?;
        self.live(planned)
            .await?
            .ok_or_else(|| "the release is missing right after helm installed it".to_owned())
    }
}

#[async_trait::async_trait]
impl Provider for HelmCli {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let reads = request.states.iter().map(|s| async move {
            self.live(s)
                .await
                .map_err(|e| Diagnostic::error("Cannot read the Helm release", e))
        });
        let mut response =
            ReadResourcesResponse::collect(&request.states, futures::future::join_all(reads).await);
        // Drift's GPU model: the operator's live values, and the cluster they act on.
        let mut facts = Vec::new();
        for (i, live) in response.states.iter().enumerate() {
            let Some(fact) = live.as_ref().and_then(|l| chart_fact(l, Some(l))) else {
                continue;
            };
            if facts.is_empty() {
                let mut cluster = Vec::new();
                self.push_cluster(&mut cluster, &mut response.diagnostics)
                    .await;
                facts.extend(cluster.into_iter().map(|f| (i, f)));
            }
            facts.push((i, fact));
        }
        response.gpu_facts.extend(facts);
        response
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let mut planned = with_defaults(&request.config);
        set(
            &mut planned,
            "namespace",
            Value::string(namespace_of(&request.config)),
        );
        set(&mut planned, "values", values_of(&request.config));
        // The paths set_wo sets, kept (without their values) so that a later refresh takes
        // those values out of what helm reports, as it does set_sensitive's.
        let wo_paths: Vec<Value> = set::entries(&request.config, "set_wo")
            .into_iter()
            .map(|(_, name, _)| Value::String(name))
            .collect();
        set(&mut planned, "set_wo_paths", Value::List(wo_paths));
        let mut requires_replace = Vec::new();
        let prior = request.prior_state.as_ref();
        // No version configured: whatever version is installed stands.
        if text(&request.config, "version").is_none()
            && let Some(installed) = prior.and_then(|p| attribute(p, "version"))
        {
            set(&mut planned, "version", installed.clone());
        }
        if let Some(prior) = prior {
            for identity in ["name", "namespace"] {
                if attribute(prior, identity) != attribute(&planned, identity) {
                    requires_replace.push(identity.to_owned());
                }
            }
        }
        let unchanged = prior.map(with_defaults).is_some_and(|p| {
            requires_replace.is_empty()
                && text(&p, "status") == Some("deployed")
                && p.as_object().is_some_and(|o| {
                    // A write-only value is never in the state: it changes nothing by itself
                    // (set_wo_revision does).
                    o.iter()
                        .filter(|(k, _)| !COMPUTED.contains(&k.as_str()) && k.as_str() != "set_wo")
                        .all(|(k, v)| {
                            planned
                                .as_object()
                                .and_then(|n| n.get(k))
                                .unwrap_or(&Value::Null)
                                == v
                        })
                })
        });
        if unchanged && let Some(prior) = prior {
            // A state that records a default unset (written before gpustack had Terraform's
            // default, or before set_wo) means the same: it is no change.
            for name in DEFAULTS
                .map(|(name, _)| name)
                .into_iter()
                .chain(["set_wo_paths"])
            {
                set(
                    &mut planned,
                    name,
                    attribute(prior, name).cloned().unwrap_or(Value::Null),
                );
            }
        }
        for name in COMPUTED {
            let value = match prior {
                Some(p) if unchanged => attribute(p, name).cloned().unwrap_or(Value::Null),
                _ if name == "status" => Value::string("deployed"),
                _ if name == "manifest" => Value::Null,
                _ => Value::Unknown,
            };
            set(&mut planned, name, value);
        }
        // An upgrade keeps the release, and with it when it was first installed.
        let first_deployed = match prior {
            Some(p) if requires_replace.is_empty() => attribute(p, "first_deployed")
                .cloned()
                .unwrap_or(Value::Unknown),
            _ => Value::Unknown,
        };
        set(&mut planned, "first_deployed", first_deployed);
        let mut diagnostics = vec![];
        let mut existing = None;
        if prior.is_none()
            && let Some(name) = text(&planned, "name")
        {
            let namespace = namespace_of(&planned);
            let replace = attribute(&planned, "replace").and_then(Value::as_bool) == Some(true);
            let found = match self.live(&planned).await {
                // `replace` reuses the name of a release that was uninstalled with its history
                // kept, or failed, as `helm install --replace` does; `helm upgrade --install`,
                // which gpustack runs, installs over either.
                Ok(Some(_)) if replace && self.reusable(name, &namespace).await => Ok(None),
                Ok(Some(_)) => self
                    .owned(name, &namespace, &request.owner)
                    .await
                    .map(|owned| Some((namespace, owned))),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            match found {
                Ok(Some((namespace, owned))) => {
                    existing = Some(gpustack_protocol::Existing {
                        import_id: format!("{namespace}/{name}"),
                        describe: format!("Helm release {namespace}/{name}"),
                        owned,
                    });
                }
                Ok(None) => {}
                Err(e) => diagnostics.push(Diagnostic::error("Cannot read the Helm release", e)),
            }
        }
        let mut gpu_facts: Vec<_> = chart_fact(&planned, prior).into_iter().collect();
        if gpu_facts.is_empty() && !request.for_apply {
            // A chart of the stack's own whose templates write claims: their selectors are
            // checked as a manifest's are.
            match self.rendered_device_requests(&planned).await {
                Ok(facts) => gpu_facts.extend(facts),
                Err(e) => diagnostics.push(Diagnostic::warning(
                    "Chart not rendered",
                    format!("The chart's DRA objects are not checked at plan: {e}"),
                )),
            }
        }
        if !gpu_facts.is_empty() && !request.for_apply {
            self.push_cluster(&mut gpu_facts, &mut diagnostics).await;
        }
        let version_changed = prior.is_none_or(|p| text(p, "version") != text(&planned, "version"));
        if version_changed
            && !request.for_apply
            && let Some(missing) = self.version_listed(&planned).await
        {
            diagnostics.push(missing);
        }
        if attribute(&planned, "lint").and_then(Value::as_bool) == Some(true)
            && !request.for_apply
            && attribute(&planned, "values").is_some_and(Value::is_wholly_known)
            && let Err(findings) = self.lint(&planned).await
        {
            diagnostics.push(Diagnostic::error("Chart lint failed", findings));
        }
        // A second operator, DRA driver or device plugin: checked at an install, on the
        // cluster as the plan read it, or read for the check alone (values not known yet).
        type SecondInstall = fn(&Value, &[gpustack_protocol::GpuFact]) -> Option<Diagnostic>;
        let second: [(fn(&Value) -> bool, SecondInstall); 3] = [
            (is_operator_chart, second_operator),
            (is_dra_driver_chart, second_dra_driver),
            (is_device_plugin_chart, second_device_plugin),
        ];
        if prior.is_none()
            && !request.for_apply
            && let Some((_, check)) = second.iter().find(|(installs, _)| installs(&planned))
        {
            if live_cluster(&gpu_facts).is_some() {
                diagnostics.extend(check(&planned, &gpu_facts));
            } else {
                let mut cluster = Vec::new();
                self.push_cluster(&mut cluster, &mut diagnostics).await;
                diagnostics.extend(check(&planned, &cluster));
            }
        }
        // An install, or a replacement (another name or namespace).
        let order = if (prior.is_none() || !requires_replace.is_empty()) && !request.for_apply {
            self.order(&planned, &mut diagnostics).await
        } else {
            Default::default()
        };
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace,
            gpu_facts,
            existing,
            diagnostics,
            order,
        }
    }

    async fn read_data_source(
        &self,
        request: gpustack_protocol::ReadDataSourceRequest,
    ) -> gpustack_protocol::ReadDataSourceResponse {
        match self.render(&request.config).await {
            Ok(state) => gpustack_protocol::ReadDataSourceResponse {
                state,
                diagnostics: vec![],
            },
            Err(e) => gpustack_protocol::ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![Diagnostic::error(
                    format!(
                        "helm template {} failed",
                        text(&request.config, "name").unwrap_or_default()
                    ),
                    e,
                )],
            },
        }
    }

    async fn import_resource(
        &self,
        request: gpustack_protocol::ImportResourceRequest,
    ) -> gpustack_protocol::ImportResourceResponse {
        match self.import(&request.id).await {
            Ok(Some(state)) => gpustack_protocol::ImportResourceResponse {
                state: Some(state),
                diagnostics: vec![],
            },
            Ok(None) => gpustack_protocol::ImportResourceResponse {
                state: None,
                diagnostics: vec![Diagnostic::error(
                    "Cannot import",
                    format!("There is no Helm release {}.", request.id),
                )],
            },
            Err(e) => gpustack_protocol::ImportResourceResponse {
                state: None,
                diagnostics: vec![Diagnostic::error("Cannot import the Helm release", e)],
            },
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        // The release the state records, if it is not there any more (uninstalled, or
        // installed again by someone else): an upgrade would install or take over another.
        if let Some(prior) = &request.prior_state
            && let Some(recorded) = text(prior, "first_deployed")
        {
            let name = text(prior, "name").unwrap_or_default();
            let namespace = namespace_of(prior);
            let status = match self.json_of(&["status", name, "-n", &namespace]).await {
                Ok(status) => status,
                Err(e) => {
                    return ApplyResourceChangeResponse {
                        new_state: Some(prior.clone()),
                        diagnostics: vec![Diagnostic::error("Cannot read the Helm release", e)],
                    };
                }
            };
            let first = status
                .as_ref()
                .and_then(|s| s.pointer("/info/first_deployed"))
                .and_then(Json::as_str);
            if first != Some(recorded) {
                let updating = request.planned_state.is_some();
                let not_there = gpustack_provider_sdk::NotThere {
                    what: format!("Helm release {namespace}/{name}"),
                    noun: "release",
                    removed: "uninstalled",
                    replaced: "uninstalled and installed again by someone else",
                    recorded: format!("first deployed {recorded}"),
                };
                return not_there.answer(prior, updating, status.is_some());
            }
        }
        match (request.planned_state, request.prior_state) {
            (Some(planned), prior) => match self
                .upgrade(&planned, prior.is_none(), &request.owner)
                .await
            {
                Ok(state) => ApplyResourceChangeResponse {
                    new_state: Some(state),
                    diagnostics: vec![],
                },
                Err(e) => ApplyResourceChangeResponse {
                    new_state: None,
                    diagnostics: vec![Diagnostic::error(
                        format!(
                            "helm upgrade --install {} failed",
                            text(&planned, "name").unwrap_or_default()
                        ),
                        e,
                    )],
                },
            },
            (None, Some(prior)) => {
                let name = text(&prior, "name").unwrap_or_default().to_owned();
                let args = vec![
                    "uninstall".into(),
                    name.clone(),
                    "-n".into(),
                    namespace_of(&prior),
                    "--wait".into(),
                ];
                match self.run(&args).await {
                    Ok(_) => ApplyResourceChangeResponse::default(),
                    Err(e) if e.contains("not found") => ApplyResourceChangeResponse::default(),
                    Err(e) => ApplyResourceChangeResponse {
                        new_state: Some(prior),
                        diagnostics: vec![Diagnostic::error(
                            format!("helm uninstall {name} failed"),
                            e,
                        )],
                    },
                }
            }
            (None, None) => ApplyResourceChangeResponse::default(),
        }
    }
}

/// A file of helm's configuration (a kubeconfig, a registry config), written where only this
/// process and the helm it runs read it, for as long as the returned handle lives.
fn write_file(what: &str, text: &str) -> Result<tempfile::NamedTempFile, Box<Diagnostic>> {
    let failed = |e: std::io::Error| {
        Box::new(Diagnostic::error(
            "Cannot configure helm",
            format!("cannot write the {what}: {e}"),
        ))
    };
    let mut file = tempfile::Builder::new()
        .prefix("gpustack-helm-")
        .tempfile()
        .map_err(failed)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(failed)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::{HelmCli, chart_values, with_defaults};
    use gpustack_protocol::Value;
    use serde_json::json;

    fn cli() -> HelmCli {
        HelmCli {
            binary: "helm".into(),
            kubeconfig: None,
            context: None,
            major: 3,
            global: Vec::new(),
            env: Vec::new(),
            _files: Vec::new(),
            gpu_cluster: tokio::sync::OnceCell::new(),
            namespaces: tokio::sync::OnceCell::new(),
            namespaces_warned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn release(wait: Option<bool>) -> Value {
        let mut config = Value::from_json(&json!({"name": "r", "chart": "c", "wait": null}));
        if let Some(wait) = wait {
            gpustack_provider_sdk::check::set(&mut config, "wait", Value::Bool(wait));
        }
        config
    }

    /// Terraform's helm provider waits unless told not to: a release configured without
    /// `wait` is planned with `wait = true` and installed with --wait.
    #[test]
    fn a_release_without_wait_is_planned_and_installed_waiting_as_in_terraform() {
        let planned = with_defaults(&release(None));
        assert_eq!(
            gpustack_provider_sdk::check::attribute(&planned, "wait"),
            Some(&Value::Bool(true))
        );
        let values = std::path::Path::new("values.json");
        for planned in [planned, release(None), release(Some(true))] {
            let args = cli().upgrade_args(&planned, false, "", values, None);
            assert!(args.contains(&"--wait".to_owned()), "{args:?}");
        }
        let planned = with_defaults(&release(Some(false)));
        let args = cli().upgrade_args(&planned, false, "", values, None);
        assert!(!args.contains(&"--wait".to_owned()), "{args:?}");
    }

    fn documents(texts: &[&str]) -> Value {
        Value::List(texts.iter().map(|t| Value::string(*t)).collect())
    }

    #[test]
    fn a_list_of_yaml_documents_merges_in_order_as_helm_does() {
        let values = documents(&[
            "driver:\n  enabled: false\ndevicePlugin:\n  config:\n    name: a\n    default: any\ntolerations: [x]\n",
            "",
            "devicePlugin:\n  config:\n    name: b\ntolerations: [y, z]\n",
        ]);
        assert_eq!(
            chart_values(&values),
            Ok(json!({
                "driver": {"enabled": false},
                "devicePlugin": {"config": {"name": "b", "default": "any"}},
                "tolerations": ["y", "z"],
            }))
        );
    }

    /// One anchored scalar of `bytes` bytes named by `aliases` aliases.
    fn long_scalar_aliases(bytes: usize, aliases: usize) -> String {
        let names: Vec<String> = (0..aliases).map(|i| format!("k{i}: *a")).collect();
        format!(
            "x: &a \"{}\"\ndata: {{{}}}\n",
            "x".repeat(bytes),
            names.join(",")
        )
    }

    #[test]
    fn values_whose_aliases_copy_a_long_scalar_are_refused_at_the_text_limit() {
        let values = documents(&["driver: {}", &long_scalar_aliases(2_000_000, 3000)]);
        let (index, why) = chart_values(&values).unwrap_err();
        assert_eq!(index, 1);
        assert!(why.contains("more than 64 MiB of text"), "{why}");
    }

    /// Each document is under the limits; together they are not.
    #[test]
    fn the_limits_hold_for_all_the_values_documents_together() {
        let document = long_scalar_aliases(1_000_000, 40);
        let values = documents(&[&document, &document]);
        let (index, why) = chart_values(&values).unwrap_err();
        assert_eq!(index, 1);
        assert!(why.contains("more than 64 MiB of text"), "{why}");
    }

    #[test]
    fn a_document_that_is_not_a_mapping_is_refused_by_its_index() {
        let values = documents(&["driver: {}", "- a\n- b\n"]);
        let (index, why) = chart_values(&values).unwrap_err();
        assert_eq!(index, 1);
        assert!(why.contains("not a mapping"), "{why}");
    }
}
