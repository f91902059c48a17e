//! The helm provider's schema: Terraform's (hashicorp/helm v2 and v3) beside gpustack's own
//! arguments, in one table. Every argument is honoured, or refused by name with the reason;
//! nothing is accepted and silently ignored.
//!
//! Where the two helm providers differ in form, both are read: v2's `set {}` / `kubernetes {}`
//! / `postrender {}` blocks and v3's `set = [...]` / `kubernetes = {...}` / `postrender = {...}`
//! arguments are one block type written either way (the engine reads a block type written as
//! an argument). Where gpustack's form differs in type from Terraform's, both mean what they
//! mean: `values` is a list of YAML documents (Terraform) or an object (gpustack); `timeout`
//! is a number of seconds (Terraform) or a duration string such as "10m" (gpustack).

use gpustack_protocol::{Attribute, BlockNesting, Schema, Type};
use gpustack_provider_sdk::check::{Checker, provider_config};

/// When setting an argument is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedWhen {
    /// Any value but null.
    Set,
    /// `true` (its default, false, is what gpustack does).
    True,
    /// `false` (its default, true, is what gpustack does).
    False,
}

/// An argument gpustack refuses, with the reason the diagnostic gives.
#[derive(Debug, Clone, Copy)]
pub struct Refusal {
    /// The argument's path: `recreate_pods`, `experiments.manifest`.
    pub path: &'static str,
    pub when: RefusedWhen,
    pub reason: &'static str,
}

const fn refuse(path: &'static str, when: RefusedWhen, reason: &'static str) -> Refusal {
    Refusal { path, when, reason }
}

/// The arguments of `helm_release` gpustack refuses; every other argument of the schema is
/// honoured.
pub const RELEASE_REFUSED: &[Refusal] = &[refuse(
    "recreate_pods",
    RefusedWhen::True,
    "Helm 3 removed --recreate-pods; roll the workloads with a changed pod-template annotation instead",
)];

/// The arguments of `data "helm_template"` gpustack refuses; every other argument of the
/// schema is honoured.
pub const TEMPLATE_REFUSED: &[Refusal] = &[refuse(
    "set_wo",
    RefusedWhen::Set,
    "a data source's answer is recorded in the plan, where a write-only value may never be; use set_sensitive, whose values gpustack keeps out of plans, output and state",
)];

/// The provider configuration's refused arguments.
pub const CONFIG_REFUSED: &[Refusal] = &[refuse(
    "experiments.manifest",
    RefusedWhen::True,
    "gpustack does not record the rendered manifest in the state; render it with helm template, or with the kubernetes provider's resources",
)];

fn str() -> Attribute {
    Attribute::optional(Type::String)
}

fn flag(description: &str) -> Attribute {
    Attribute::optional(Type::Bool).describe(description)
}

/// `set`, `set_list` and `set_sensitive`: a value at a dotted path of the chart's values.
fn set_block(sensitive: bool, list: bool) -> Schema {
    let value = if list {
        Attribute::required(Type::list(Type::String))
    } else {
        Attribute::optional(Type::String)
    };
    let value = if sensitive { value.sensitive() } else { value };
    let schema = Schema::new("A chart value at a dotted path, as helm --set takes it.")
        .attr("name", Attribute::required(Type::String))
        .attr("value", value);
    if list {
        schema
    } else {
        schema.attr(
            "type",
            str().describe("\"auto\" (helm's --set typing, the default) or \"string\"."),
        )
    }
}

/// The cluster helm talks to: Terraform's `kubernetes {}` block of the helm provider.
fn kubernetes_block() -> Schema {
    Schema::new("The cluster helm installs into.")
        .attr("config_path", str())
        .attr(
            "config_paths",
            Attribute::optional(Type::list(Type::String)),
        )
        .attr("config_context", str())
        .attr("config_context_auth_info", str())
        .attr("config_context_cluster", str())
        .attr("host", str())
        .attr("username", str())
        .attr("password", str().sensitive())
        .attr("token", str().sensitive())
        .attr("insecure", Attribute::optional(Type::Bool))
        .attr("tls_server_name", str())
        .attr("client_certificate", str())
        .attr("client_key", str().sensitive())
        .attr("cluster_ca_certificate", str())
        .attr("proxy_url", str())
        .block(
            "exec",
            BlockNesting::Single,
            Schema::new("A credential plugin, as a kubeconfig's exec.")
                .attr("api_version", Attribute::required(Type::String))
                .attr("command", Attribute::required(Type::String))
                .attr("args", Attribute::optional(Type::list(Type::String)))
                .attr("env", Attribute::optional(Type::map(Type::String))),
        )
}

fn registry_block() -> Schema {
    Schema::new("An OCI registry helm logs in to.")
        .attr("url", Attribute::required(Type::String))
        .attr("username", Attribute::required(Type::String))
        .attr("password", Attribute::required(Type::String).sensitive())
}

/// The provider configuration: gpustack's `helm_binary`, `config_path`, `context`, and
/// Terraform's.
pub fn config() -> Schema {
    provider_config("Helm releases through the helm CLI (3.x or 4.x).")
        .attr(
            "helm_binary",
            str().describe("Path of helm; default: helm on PATH."),
        )
        .attr("config_path", str())
        .attr("context", str())
        .attr("debug", flag("helm --debug."))
        .attr("plugins_path", str().describe("HELM_PLUGINS."))
        .attr(
            "registry_config_path",
            str().describe("helm --registry-config."),
        )
        .attr(
            "repository_config_path",
            str().describe("helm --repository-config."),
        )
        .attr(
            "repository_cache",
            str().describe("helm --repository-cache."),
        )
        .attr(
            "helm_driver",
            str().describe("HELM_DRIVER: secret, configmap or memory."),
        )
        .attr(
            "burst_limit",
            Attribute::optional(Type::Number).describe("helm --burst-limit."),
        )
        .attr(
            "qps",
            Attribute::optional(Type::Number).describe("helm --qps."),
        )
        .block_or_argument("kubernetes", BlockNesting::Single, kubernetes_block())
        .block("registry", BlockNesting::List, registry_block())
        .block_or_argument("registries", BlockNesting::List, registry_block())
        .block_or_argument(
            "experiments",
            BlockNesting::Single,
            Schema::new("Experimental features.").attr("manifest", Attribute::optional(Type::Bool)),
        )
}

/// `helm_release`: gpustack's arguments and every one of Terraform's.
pub fn release() -> Schema {
    let metadata = Type::Object(
        [
            "name",
            "revision",
            "namespace",
            "chart",
            "version",
            "app_version",
            "values",
            "notes",
        ]
        .into_iter()
        .map(|k| {
            let ty = if k == "revision" {
                Type::Number
            } else {
                Type::String
            };
            (k.to_owned(), gpustack_protocol::ObjectAttr::optional(ty))
        })
        .collect(),
    );
    chart_source(
        Schema::new("A Helm release.")
            .attr("name", Attribute::required(Type::String).force_new()),
    )
        .attr(
            "namespace",
            Attribute::optional_computed(Type::String).force_new(),
        )
        .attr("create_namespace", flag("helm --create-namespace."))
        .attr(
            "values",
            Attribute::optional(Type::Any).describe(
                "Chart values: a list of YAML documents merged in order (Terraform's form), or an object.",
            ),
        )
        .block_or_argument("set", BlockNesting::List, set_block(false, false))
        .block_or_argument("set_list", BlockNesting::List, set_block(false, true))
        .block_or_argument("set_sensitive", BlockNesting::List, set_block(true, false))
        .attr(
            "set_wo",
            Attribute::optional(Type::Any)
                .sensitive()
                .write_only()
                .describe("Write-only set values ({ name, value, type }): passed to helm as set_sensitive's are, never recorded; a change reaches the release when set_wo_revision changes."),
        )
        .attr("set_wo_revision", Attribute::optional(Type::Number))
        .attr(
            "set_wo_paths",
            Attribute::computed(Type::list(Type::String))
                .describe("The paths set_wo sets (never their values)."),
        )
        .attr("atomic", flag("helm --atomic (Helm 4: --rollback-on-failure)."))
        .attr(
            "wait",
            flag("helm --wait: wait until every object of the release is ready, up to timeout. Default true, as in Terraform's helm provider; set false where the release's pods cannot become ready when it is installed."),
        )
        .attr("wait_for_jobs", flag("helm --wait-for-jobs (default false, as in Terraform)."))
        .attr(
            "timeout",
            Attribute::optional(Type::Any).describe(
                "How long helm waits: seconds (Terraform's form, a number) or a duration such as \"10m\".",
            ),
        )
        .attr("skip_crds", flag("helm --skip-crds."))
        .attr("disable_webhooks", flag("helm --no-hooks."))
        .attr(
            "disable_crd_hooks",
            flag("Accepted: the Terraform provider passes it to no helm action either."),
        )
        .attr("disable_openapi_validation", flag("helm --disable-openapi-validation."))
        .attr("render_subchart_notes", flag("helm --render-subchart-notes."))
        .attr("dependency_update", flag("helm --dependency-update."))
        .attr("cleanup_on_fail", flag("helm --cleanup-on-fail."))
        .attr("force_update", flag("helm --force (Helm 4: --force-replace)."))
        .attr("recreate_pods", flag("Refused when true: Helm 3 removed it."))
        .attr(
            "reuse_values",
            flag("helm --reuse-values at an upgrade: the new values merged into the previous release's."),
        )
        .attr(
            "reset_values",
            flag("Unset or true: helm --reset-values. False: helm's own rule (the previous values kept when the upgrade is given none)."),
        )
        .attr(
            "replace",
            flag("Reuse the name of a release uninstalled with its history kept, or failed (helm install --replace)."),
        )
        .attr("lint", flag("helm lint of the chart with its values, at plan."))
        .attr("upgrade_install", flag("What gpustack always does: helm upgrade --install."))
        .attr("take_ownership", flag("helm --take-ownership."))
        .attr("max_history", Attribute::optional(Type::Number).describe("helm --history-max."))
        .attr("description", str().describe("helm --description."))
        .block_or_argument(
            "postrender",
            BlockNesting::Single,
            Schema::new("A post-renderer: helm --post-renderer and --post-renderer-args.")
                .attr("binary_path", Attribute::required(Type::String))
                .attr("args", Attribute::optional(Type::list(Type::String))),
        )
        .attr("revision", Attribute::computed(Type::Number))
        .attr("status", Attribute::computed(Type::String))
        .attr("app_version", Attribute::computed(Type::String))
        .attr(
            "manifest",
            Attribute::computed(Type::String).describe(
                "Terraform's rendered manifest, with experiments.manifest: never recorded (refused there).",
            ),
        )
        .attr(
            "metadata",
            Attribute::computed(metadata)
                .describe("The release as helm reports it (the helm provider v3's form)."),
        )
        .attr(
            "first_deployed",
            Attribute::computed(Type::String).describe(
                "When the release was first installed: a release of the same name installed since is another one.",
            ),
        )
}

/// Where a chart comes from and how it is checked: what a release and a render share.
fn chart_source(schema: Schema) -> Schema {
    schema
        .attr(
            "chart",
            Attribute::required(Type::String).describe(
                "Chart name in the repository, an OCI reference, or a local path or .tgz.",
            ),
        )
        .attr("repository", str())
        .attr("repository_username", str())
        .attr("repository_password", str().sensitive())
        .attr("repository_key_file", str())
        .attr("repository_cert_file", str())
        .attr("repository_ca_file", str())
        .attr("pass_credentials", flag("helm --pass-credentials."))
        .attr("version", str())
        .attr("devel", flag("helm --devel."))
        .attr("verify", flag("helm --verify."))
        .attr("keyring", str().describe("helm --keyring."))
}

/// `data "helm_template"`: a chart rendered by `helm template`, with every argument of
/// Terraform's helm provider's data source (v2 and v3). The install-only flags (`atomic`,
/// `wait`, `timeout`, `create_namespace`, `replace`, `reuse_values`, `reset_values`) change
/// nothing in a render, in Terraform as here.
pub fn template() -> Schema {
    let strings = || Attribute::optional(Type::list(Type::String));
    let no_effect = "Accepted as in Terraform: a render installs nothing, so it changes nothing.";
    chart_source(
        Schema::new("A chart rendered with helm template, as Terraform's helm provider renders it.")
            .attr("name", Attribute::required(Type::String).describe("The release name.")),
    )
        .attr("namespace", str().describe("helm --namespace; default: default."))
        .attr(
            "values",
            Attribute::optional(Type::Any).describe(
                "Chart values: a list of YAML documents merged in order (Terraform's form), or an object.",
            ),
        )
        .block_or_argument("set", BlockNesting::List, set_block(false, false))
        .block_or_argument("set_list", BlockNesting::List, set_block(false, true))
        .block_or_argument("set_sensitive", BlockNesting::List, set_block(true, false))
        .attr("set_wo", Attribute::optional(Type::Any).sensitive())
        .attr("api_versions", strings().describe("helm --api-versions, each."))
        .attr("kube_version", str().describe("helm --kube-version."))
        .attr("include_crds", flag("helm --include-crds."))
        .attr("is_upgrade", flag("helm --is-upgrade."))
        .attr("show_only", strings().describe("helm --show-only, each."))
        .attr("skip_tests", flag("helm --skip-tests."))
        .attr("skip_crds", flag("helm --skip-crds."))
        .attr(
            "validate",
            flag("helm --validate: checks the manifests against the provider's cluster."),
        )
        .attr("disable_webhooks", flag("helm --no-hooks: hooks are not rendered."))
        .attr("disable_openapi_validation", flag("helm --disable-openapi-validation."))
        .attr("disable_schema_validation", flag("helm --skip-schema-validation."))
        .attr("render_subchart_notes", flag("helm --render-subchart-notes."))
        .attr("dependency_update", flag("helm --dependency-update."))
        .attr("description", str().describe("helm --description."))
        .attr("atomic", flag(no_effect))
        .attr("wait", flag(no_effect))
        .attr("create_namespace", flag(no_effect))
        .attr("replace", flag(no_effect))
        .attr("reuse_values", flag(no_effect))
        .attr("reset_values", flag(no_effect))
        .attr(
            "timeout",
            Attribute::optional(Type::Any).describe(
                "Accepted as in Terraform (seconds, or a duration such as \"10m\"): a render waits for nothing.",
            ),
        )
        .block_or_argument(
            "timeouts",
            BlockNesting::Single,
            Schema::new("How long the render may take.").attr(
                "read",
                str().describe("A duration such as \"5m\"; default 20m, as in Terraform."),
            ),
        )
        .block_or_argument(
            "postrender",
            BlockNesting::Single,
            Schema::new("A post-renderer: helm --post-renderer and --post-renderer-args.")
                .attr("binary_path", Attribute::required(Type::String))
                .attr("args", Attribute::optional(Type::list(Type::String))),
        )
        .attr("id", Attribute::computed(Type::String).describe("The release name."))
        .attr(
            "manifest",
            Attribute::computed(Type::String).describe(
                "Every rendered document, each after ---: sensitive when set_sensitive is used.",
            ),
        )
        .attr(
            "manifests",
            Attribute::computed(Type::map(Type::String))
                .describe("The rendered documents of each template, by its path in the chart."),
        )
        .attr(
            "notes",
            Attribute::computed(Type::String).describe("The chart's rendered NOTES.txt."),
        )
        .attr(
            "crds",
            Attribute::computed(Type::list(Type::String))
                .describe("The chart's CRD files (its crds/ directory)."),
        )
}

/// Refuses the arguments of `refused` the configuration sets.
pub fn check_refused(check: &mut Checker<'_>, refused: &[Refusal]) {
    for r in refused {
        let Some(value) = check.get(r.path) else {
            continue;
        };
        let hit = match r.when {
            RefusedWhen::Set => true,
            RefusedWhen::True => value.as_bool() == Some(true),
            RefusedWhen::False => value.as_bool() == Some(false),
        };
        if hit {
            let what = match r.when {
                RefusedWhen::Set => String::new(),
                RefusedWhen::True => " = true".into(),
                RefusedWhen::False => " = false".into(),
            };
            check.error(
                r.path,
                "Unsupported argument value",
                format!("gpustack does not honour {}{what}: {}.", r.path, r.reason),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every refusal names an argument the schema has: a refusal of a misspelt path would
    /// never fire.
    #[test]
    fn every_refused_argument_is_in_the_schema() {
        let has = |schema: &Schema, path: &str| {
            let mut schema = schema;
            let mut steps = path.split('.').peekable();
            while let Some(step) = steps.next() {
                if steps.peek().is_none() {
                    return schema.attributes.contains_key(step);
                }
                match schema.blocks.get(step) {
                    Some(nested) => schema = &nested.block,
                    None => return false,
                }
            }
            false
        };
        for r in RELEASE_REFUSED {
            assert!(has(&release(), r.path), "{}", r.path);
        }
        for r in CONFIG_REFUSED {
            assert!(has(&config(), r.path), "{}", r.path);
        }
        for r in TEMPLATE_REFUSED {
            assert!(has(&template(), r.path), "{}", r.path);
        }
    }
}
