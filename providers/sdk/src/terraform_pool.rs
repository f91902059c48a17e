//! A Terraform provider's GPU node pool type (`google_container_node_pool`,
//! `aws_eks_node_group`, `azurerm_kubernetes_cluster_node_pool`) on a cloud's own pool flow:
//! its values read in the cloud's own pool schema by a table of renames, so that one shape,
//! one set of checks, one GPU fact and one [`Pools`] flow (refresh, plan, the creation mark,
//! apply, rollout, import) serve both; the answers written back in the Terraform type's
//! schema. Also what `gpustack review` makes of a change to such a type.

use crate::pool::{
    CREATION_TOKEN, CloudPool, Pools, REPLACING, REPLACING_MARK, ROLLOUT, reviewed_pool_fact,
};
use crate::resource::Resource;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, GpuFact,
    PlanDeleteRequest, PlanDeleteResponse, PlanResourceChangeRequest, PlanResourceChangeResponse,
    PoolShape, ReadResourcesRequest, ReadResourcesResponse, Value,
};
use std::collections::BTreeMap;

/// A Terraform provider's GPU node pool type read in a cloud's own pool schema: each own
/// attribute (`accelerator.type`, a dotted path into a single block) and the path of the
/// Terraform type's value it is read from (`node_config.0.guest_accelerator.0.type`, list
/// items by index, as Terraform nests blocks); and how its import IDs are written.
pub struct TerraformPool {
    pub type_name: &'static str,
    pub renames: &'static [(&'static str, &'static str)],
    /// The own import ID (the SDK's `PoolKey`) of one of the Terraform type's import IDs.
    pub own_import_id: fn(&str) -> Option<String>,
    /// The Terraform type's import ID of an own one (what a plan tells a user to import).
    pub terraform_import_id: fn(&str) -> String,
    /// The import IDs the Terraform type takes, for the error of one it does not.
    pub import_formats: &'static str,
    /// The tags of a type whose provider adds default tags: (the own attribute, the Terraform
    /// type's `tags`, its computed `tags_all`, the configuration's tags with the defaults).
    pub tags: Option<(&'static str, &'static str, &'static str)>,
    /// What no rename says, read into the own value (`kubernetes_cluster_id` → the resource
    /// group and the cluster), and written back into the Terraform value.
    pub derived: Option<(Derive, Derive)>,
}

/// Reads what no rename says from one value into the other.
pub type Derive = fn(&Value, &mut Value);

/// What every pool's state carries besides the cloud's attributes: gpustack's own.
const CARRIED: [&str; 5] = ["id", CREATION_TOKEN, REPLACING, REPLACING_MARK, ROLLOUT];

/// The value at a dotted path (`node_config.0.labels`): keys into objects, indexes into lists.
fn at_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, step| match v {
        Value::Unknown => Some(v),
        Value::List(items) => items.get(step.parse::<usize>().ok()?),
        _ => crate::check::attribute(v, step),
    })
}

impl TerraformPool {
    /// The value in the cloud's own pool schema; an own block stays absent when none of its
    /// attributes is set.
    pub fn own(&self, terraform: &Value) -> Value {
        let mut own = Value::Object(Default::default());
        for (name, from) in self.renames {
            let Some(found) = at_path(terraform, from).filter(|v| !v.is_null()) else {
                // An attribute the configuration leaves unset is null, as in a configuration
                // of the own type (where a computed one keeps its prior value).
                if !name.contains('.') && !own.as_object().is_some_and(|o| o.contains_key(*name)) {
                    crate::check::set(&mut own, name, Value::Null);
                }
                continue;
            };
            match name.split_once('.') {
                None => crate::check::set(&mut own, name, found.clone()),
                Some((block, inner)) => {
                    let mut nested = crate::check::attribute(&own, block)
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    crate::check::set(&mut nested, inner, found.clone());
                    crate::check::set(&mut own, block, nested);
                }
            }
        }
        own
    }

    /// Where an own attribute (`accelerator.gpu_partition_size`, `taints[1].effect`) is in
    /// the Terraform type's configuration (`node_config[0].guest_accelerator[0].gpu_partition_size`).
    pub fn terraform_attribute(&self, own: &str) -> Option<String> {
        let indexed = |from: &str| {
            from.split('.')
                .map(|step| match step.parse::<usize>() {
                    Ok(i) => format!("[{i}]"),
                    Err(_) => format!(".{step}"),
                })
                .collect::<String>()
                .trim_start_matches('.')
                .to_owned()
        };
        // An own block (`accelerator`) is where its attributes' Terraform paths meet.
        let block = || {
            self.renames.iter().find_map(|(name, from)| {
                name.strip_prefix(own)?.strip_prefix('.')?;
                let (parent, _) = from.rsplit_once('.')?;
                Some(indexed(parent))
            })
        };
        self.renames
            .iter()
            .find_map(|(name, from)| {
                let rest = own.strip_prefix(name)?;
                if !(rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')) {
                    return None;
                }
                Some(format!("{}{rest}", indexed(from)))
            })
            .or_else(block)
    }

    /// [`TerraformPool::terraform_attribute`] of a path.
    fn terraform_path(&self, own: &gpustack_protocol::Path) -> gpustack_protocol::Path {
        self.terraform_attribute(&gpustack_protocol::path_text(own))
            .map_or_else(
                || own.to_vec(),
                |text| gpustack_protocol::path_of_text(&text),
            )
    }

    /// A GPU fact with its paths in the Terraform type's configuration.
    fn terraform_fact(&self, fact: GpuFact) -> GpuFact {
        match fact {
            GpuFact::Pool(mut pool) => {
                pool.labels_attribute = self.terraform_path(&pool.labels_attribute);
                if let Some(software) = &mut pool.managed_gpu_software {
                    software.attribute = self.terraform_path(&software.attribute);
                }
                GpuFact::Pool(pool)
            }
            other => other,
        }
    }

    /// Diagnostics located in the Terraform type's configuration.
    fn terraform_diagnostics(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diagnostics
            .into_iter()
            .map(|mut d| {
                if let Some(a) = d.attribute.as_deref() {
                    d.attribute = self.terraform_attribute(a).or(d.attribute.take());
                }
                d
            })
            .collect()
    }

    /// A state or configuration of the Terraform type in the own schema, with what gpustack
    /// itself records (the creation mark, the rollout, an unfinished replacement).
    pub fn own_state(&self, terraform: &Value) -> Value {
        self.own_state_with(terraform, &BTreeMap::new())
    }

    /// [`TerraformPool::own_state`] with the provider's default tags under the type's own.
    pub fn own_state_with(
        &self,
        terraform: &Value,
        default_tags: &BTreeMap<String, String>,
    ) -> Value {
        let mut own = self.own(terraform);
        if let Some((own_tags, tags, _)) = self.tags {
            let configured = crate::check::attribute(terraform, tags);
            let value = match configured {
                Some(t) if !t.is_wholly_known() => Value::Unknown,
                _ => {
                    let mut all: BTreeMap<String, String> = default_tags.clone();
                    all.extend(crate::check::string_map(terraform, tags));
                    if all.is_empty() {
                        Value::Null
                    } else {
                        Value::Object(
                            all.into_iter()
                                .map(|(k, v)| (k, Value::string(v)))
                                .collect(),
                        )
                    }
                }
            };
            crate::check::set(&mut own, own_tags, value);
        }
        if let Some((read, _)) = self.derived {
            read(terraform, &mut own);
        }
        for name in CARRIED {
            if let Some(v) = crate::check::attribute(terraform, name) {
                crate::check::set(&mut own, name, v.clone());
            }
        }
        own
    }

    /// An own state written into the Terraform type's schema over `base` (its configuration,
    /// or its state before): every renamed path set from the own value (a block the own value
    /// lacks emptied), the rest of `base` as it was.
    pub fn terraform_state(&self, own: &Value, base: &Value) -> Value {
        let mut terraform = base.clone();
        if terraform.as_object().is_none() {
            terraform = Value::Object(Default::default());
        }
        for (i, (name, to)) in self.renames.iter().enumerate() {
            // An own attribute read from two spellings (a provider's old and new names) is
            // written back only where the Terraform value has it, else to the first one.
            let spellings = self.renames.iter().filter(|(n, _)| n == name).count();
            let first = self.renames.iter().position(|(n, _)| n == name) == Some(i);
            let top = to.split('.').next().unwrap_or(to);
            let present = terraform.as_object().is_some_and(|o| o.contains_key(top));
            let written_here = first && !self.any_present(name, &terraform);
            if spellings > 1 && !present && !written_here {
                continue;
            }
            match name.split_once('.') {
                Some((block, _)) if crate::check::attribute(own, block).is_none() => {
                    let list = to
                        .rsplit_once('.')
                        .and_then(|(parent, _)| parent.rsplit_once('.'))
                        .map_or(*to, |(list, _)| list);
                    set_path(&mut terraform, list, Value::List(Vec::new()));
                }
                _ => {
                    let value = at_path(own, name).cloned().unwrap_or(Value::Null);
                    set_path(&mut terraform, to, value);
                }
            }
        }
        for name in CARRIED {
            let value = crate::check::attribute(own, name)
                .cloned()
                .unwrap_or(Value::Null);
            crate::check::set(&mut terraform, name, value);
        }
        if let Some((own_tags, _, all)) = self.tags {
            let value = match crate::check::attribute(own, own_tags) {
                Some(v) => v.clone(),
                None => Value::Object(Default::default()),
            };
            crate::check::set(&mut terraform, all, value);
        }
        if let Some((_, write)) = self.derived {
            write(own, &mut terraform);
        }
        terraform
    }

    fn any_present(&self, name: &str, terraform: &Value) -> bool {
        self.renames.iter().any(|(n, to)| {
            *n == name
                && terraform
                    .as_object()
                    .is_some_and(|o| o.contains_key(to.split('.').next().unwrap_or(to)))
        })
    }

    /// `gpustack review` of one change to this type: its GPU fact, with the machines from
    /// `shape` (tables only), and what `check` (the cloud's checks of its own pool) finds,
    /// located in the Terraform type's configuration.
    pub fn review<P: CloudPool>(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
        shape: impl Fn(&Value) -> Option<PoolShape>,
        check: impl Fn(&Value) -> Vec<Diagnostic>,
    ) -> Option<gpustack_protocol::Reviewed> {
        if change.type_name != self.type_name {
            return None;
        }
        let before = change.before.map(|v| self.own(v));
        let after = change.after.map(|v| self.own(v));
        let facts = reviewed_pool_fact::<P>(before.as_ref(), after.as_ref(), change.replace, shape)
            .map(|fact| self.terraform_fact(fact))
            .into_iter()
            .collect();
        let diagnostics = self.terraform_diagnostics(after.as_ref().map(check).unwrap_or_default());
        Some(gpustack_protocol::Reviewed { facts, diagnostics })
    }
}

/// Sets the value at a dotted path, making the objects and one-item lists on the way; a null
/// is not worth making them for.
fn set_path(value: &mut Value, path: &str, new: Value) {
    let mut steps = path.split('.').peekable();
    let mut current = value;
    while let Some(step) = steps.next() {
        let last = steps.peek().is_none();
        if let Ok(i) = step.parse::<usize>() {
            if !matches!(current, Value::List(_)) {
                if new.is_null() {
                    return;
                }
                *current = Value::List(Vec::new());
            }
            let Value::List(items) = current else { return };
            if items.len() <= i {
                if new.is_null() {
                    return;
                }
                items.resize(i + 1, Value::Object(Default::default()));
            }
            if last {
                items[i] = new;
                return;
            }
            current = &mut items[i];
            continue;
        }
        if !matches!(current, Value::Object(_)) {
            if new.is_null() {
                return;
            }
            *current = Value::Object(Default::default());
        }
        let Value::Object(map) = current else { return };
        if last {
            map.insert(step.to_owned(), new);
            return;
        }
        let next_is_index = steps.peek().is_some_and(|s| s.parse::<usize>().is_ok());
        let entry = map.entry(step.to_owned()).or_insert(Value::Null);
        if entry.is_null() {
            if new.is_null() {
                return;
            }
            *entry = if next_is_index {
                Value::List(Vec::new())
            } else {
                Value::Object(Default::default())
            };
        }
        current = entry;
    }
}

/// A block Terraform nests at most once (`node_config { ... }`): a list of one.
pub fn single_block(
    mut schema: gpustack_protocol::Schema,
    name: &str,
    block: gpustack_protocol::Schema,
) -> gpustack_protocol::Schema {
    schema.blocks.insert(
        name.to_owned(),
        gpustack_protocol::NestedBlock {
            nesting: gpustack_protocol::BlockNesting::List,
            min_items: 0,
            max_items: Some(1),
            block,
            also_argument: false,
        },
    );
    schema
}

/// The schema of a block gpustack refuses: its arguments named (any type), so that the
/// refusal names the block rather than its first argument as unknown.
pub fn refused_block(names: &[&str]) -> gpustack_protocol::Schema {
    names.iter().fold(
        gpustack_protocol::Schema::new("Not served by gpustack (see the refusal)."),
        |s, n| {
            s.attr(
                n,
                gpustack_protocol::Attribute::optional(gpustack_protocol::Type::Any),
            )
        },
    )
}

/// Whether a configuration sets a value: not null, and not an empty list or map.
pub fn is_set(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::List(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(_) => true,
    }
}

/// An error at each argument of `refused` (a path and why) that the configuration sets,
/// saying what serves it instead (`what`: "gpustack's GKE node pools").
pub fn refuse_unserved(
    check: &mut crate::check::Checker<'_>,
    refused: &[(&str, &str)],
    what: &str,
) {
    for (path, why) in refused {
        if is_set(check.get(path)) {
            check.error(
                path,
                "Argument not served",
                format!("{path} is not served by {what}: {why}. Keep this pool in Terraform and review its plans with gpustack review, or remove the argument."),
            );
        }
    }
}

/// An error at each argument of a provider block's `refused` (a name and why) that its
/// configuration sets (`provider`: "gpustack's aws provider").
pub fn refuse_provider_arguments(
    check: &mut crate::check::Checker<'_>,
    refused: &[(&str, &str)],
    provider: &str,
) {
    for (name, why) in refused {
        if is_set(check.get(name)) {
            check.error(
                name,
                "Argument not served",
                format!("{name} is not served by {provider}: {why}."),
            );
        }
    }
}

/// The cloud's own checks (`own_check`, on the own schema) of a Terraform pool type's
/// configuration, located in the Terraform type's.
pub fn own_checks(
    check: &mut crate::check::Checker<'_>,
    pool: &TerraformPool,
    own_check: impl FnOnce(&mut crate::check::Checker<'_>),
) {
    let own = pool.own_state(check.config());
    let mut checker = crate::check::Checker::new(&own);
    own_check(&mut checker);
    check
        .diagnostics
        .extend(pool.terraform_diagnostics(checker.diagnostics));
}

/// A Terraform provider's pool type served on the cloud's own [`Pools`] flow: every request
/// read in the own schema, every answer written back in the Terraform type's.
pub struct TerraformPools<P: CloudPool> {
    pub pool: &'static TerraformPool,
    pub inner: Pools<P>,
    /// The provider block's default tags (`default_tags { tags }`), under each pool's own.
    pub default_tags: BTreeMap<String, String>,
}

impl<P: CloudPool> TerraformPools<P> {
    fn answer(
        &self,
        mut response: PlanResourceChangeResponse,
        base: &Value,
    ) -> PlanResourceChangeResponse {
        response.planned_state = self.pool.terraform_state(&response.planned_state, base);
        response.requires_replace = response
            .requires_replace
            .into_iter()
            .map(|r| self.pool.terraform_attribute(&r).unwrap_or(r))
            .collect();
        response.gpu_facts = response
            .gpu_facts
            .into_iter()
            .map(|f| self.pool.terraform_fact(f))
            .collect();
        response.diagnostics = self.pool.terraform_diagnostics(response.diagnostics);
        if let Some(existing) = &mut response.existing {
            existing.import_id = (self.pool.terraform_import_id)(&existing.import_id);
        }
        response
    }
}

#[async_trait::async_trait]
impl<P: CloudPool> Resource for TerraformPools<P> {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let terraform = request.states.clone();
        let own = ReadResourcesRequest {
            states: terraform
                .iter()
                .map(|s| self.pool.own_state_with(s, &self.default_tags))
                .collect(),
            sensitive_paths: vec![Vec::new(); terraform.len()],
            ..request
        };
        let mut response = self.inner.read(own).await;
        response.states = response
            .states
            .into_iter()
            .zip(&terraform)
            .map(|(state, base)| state.map(|s| self.pool.terraform_state(&s, base)))
            .collect();
        response.gpu_facts = response
            .gpu_facts
            .into_iter()
            .map(|(i, f)| (i, self.pool.terraform_fact(f)))
            .collect();
        response.diagnostics = self.pool.terraform_diagnostics(response.diagnostics);
        response
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let base = request.config.clone();
        let own = PlanResourceChangeRequest {
            config: self
                .pool
                .own_state_with(&request.config, &self.default_tags),
            prior_state: request
                .prior_state
                .as_ref()
                .map(|p| self.pool.own_state_with(p, &self.default_tags)),
            sensitive_paths: Vec::new(),
            ..request
        };
        let response = self.inner.plan(own).await;
        self.answer(response, &base)
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let base = request
            .planned_state
            .clone()
            .or_else(|| request.prior_state.clone())
            .unwrap_or(Value::Null);
        let own = |v: &Option<Value>| {
            v.as_ref()
                .map(|v| self.pool.own_state_with(v, &self.default_tags))
        };
        let mut replaced_by = request.replaced_by.clone();
        if let Some(successor) = &mut replaced_by {
            successor.state = self
                .pool
                .own_state_with(&successor.state, &self.default_tags);
        }
        let own_request = ApplyResourceChangeRequest {
            prior_state: own(&request.prior_state),
            planned_state: own(&request.planned_state),
            sensitive_paths: Vec::new(),
            replaced_by,
            ..request
        };
        let mut response = self.inner.apply(own_request).await;
        response.new_state = response
            .new_state
            .map(|s| self.pool.terraform_state(&s, &base));
        response.diagnostics = self.pool.terraform_diagnostics(response.diagnostics);
        response
    }

    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let own = PlanDeleteRequest {
            prior_state: self
                .pool
                .own_state_with(&request.prior_state, &self.default_tags),
            replaced_by: request
                .replaced_by
                .as_ref()
                .map(|(v, made)| (self.pool.own_state_with(v, &self.default_tags), *made)),
            ..request
        };
        let mut response = self.inner.plan_delete(own).await;
        response.diagnostics = self.pool.terraform_diagnostics(response.diagnostics);
        response
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let Some(own_id) = (self.pool.own_import_id)(id) else {
            return Err(vec![Diagnostic::error(
                "Invalid import ID",
                format!(
                    "\"{id}\" is not an import ID of {}: {}.",
                    self.pool.type_name, self.pool.import_formats
                ),
            )]);
        };
        let own = self.inner.import(&own_id).await?;
        Ok(self.pool.terraform_state(&own, &Value::Null))
    }
}

/// The data source of a Terraform provider's pool type (`data "aws_eks_node_group"`): the
/// live pool its arguments name, read on the cloud's own flow, in the type's schema (`pool`:
/// the data source's own renames, whose arguments may differ from the resource's).
pub struct TerraformPoolData<P: CloudPool> {
    pub pool: &'static TerraformPool,
    pub cloud: std::sync::Arc<P>,
}

#[async_trait::async_trait]
impl<P: CloudPool> crate::resource::DataSource for TerraformPoolData<P> {
    async fn read(&self, config: Value) -> gpustack_protocol::ReadDataSourceResponse {
        let own = self.pool.own_state(&config);
        let Some(key) = P::key(&own) else {
            return gpustack_protocol::ReadDataSourceResponse {
                state: Value::Unknown,
                diagnostics: Vec::new(),
            };
        };
        match self.cloud.get(&key).await {
            Ok(Some(live)) => gpustack_protocol::ReadDataSourceResponse {
                state: self.pool.terraform_state(&live.state, &config),
                diagnostics: Vec::new(),
            },
            Ok(None) => gpustack_protocol::ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![Diagnostic::error(
                    format!("{} not found", P::KIND),
                    format!("There is no {} {key}.", P::KIND),
                )],
            },
            Err(d) => gpustack_protocol::ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![d],
            },
        }
    }
}

/// A data source's schema from its resource's: the `inputs` required, everything else
/// computed (a block as a computed list of its objects), gpustack's own bookkeeping left out.
pub fn data_schema(
    resource: &gpustack_protocol::Schema,
    inputs: &[&str],
) -> gpustack_protocol::Schema {
    use gpustack_protocol::{Attribute, Schema, Type};
    let mut schema = Schema::new(format!("Read: {}", resource.description));
    for (name, attribute) in &resource.attributes {
        if [CREATION_TOKEN, REPLACING, REPLACING_MARK].contains(&name.as_str()) {
            continue;
        }
        let attribute = if inputs.contains(&name.as_str()) {
            Attribute::required(attribute.ty.clone())
        } else {
            Attribute::computed(attribute.ty.clone())
        };
        schema = schema.attr(name, attribute);
    }
    for name in inputs {
        if !schema.attributes.contains_key(*name) {
            schema = schema.attr(name, Attribute::required(Type::String));
        }
    }
    for name in resource.blocks.keys() {
        if name != ROLLOUT && name != "timeouts" {
            schema = schema.attr(name, Attribute::computed(Type::list(Type::Any)));
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_id(id: &str) -> Option<String> {
        Some(id.to_owned())
    }

    fn terraform_id(id: &str) -> String {
        id.to_owned()
    }

    const GKE_LIKE: TerraformPool = TerraformPool {
        type_name: "google_container_node_pool",
        renames: &[
            ("name", "name"),
            ("taints", "node_config.0.taint"),
            ("accelerator.type", "node_config.0.guest_accelerator.0.type"),
            (
                "accelerator.count",
                "node_config.0.guest_accelerator.0.count",
            ),
        ],
        own_import_id: own_id,
        terraform_import_id: terraform_id,
        import_formats: "LOCATION/CLUSTER/NAME",
        tags: None,
        derived: None,
    };

    #[test]
    fn a_terraform_pool_reads_its_nested_blocks_into_the_own_schema_and_names_them_back() {
        let terraform = Value::from_json(&serde_json::json!({
            "name": "p",
            "node_config": [{"guest_accelerator": [{"type": "nvidia-l4", "count": 2}], "taint": []}]
        }));
        let own = GKE_LIKE.own(&terraform);
        assert_eq!(
            own.to_json(),
            serde_json::json!({"name": "p", "taints": [], "accelerator": {"type": "nvidia-l4", "count": 2}})
        );
        let without = GKE_LIKE.own(&Value::from_json(&serde_json::json!({"name": "p"})));
        assert!(crate::check::attribute(&without, "accelerator").is_none());
        for (own, terraform) in [
            (
                "accelerator.type",
                "node_config[0].guest_accelerator[0].type",
            ),
            ("taints[1].effect", "node_config[0].taint[1].effect"),
            ("accelerator", "node_config[0].guest_accelerator[0]"),
        ] {
            assert_eq!(
                GKE_LIKE.terraform_attribute(own).as_deref(),
                Some(terraform)
            );
        }
        assert_eq!(GKE_LIKE.terraform_attribute("rollout"), None);
    }

    #[test]
    fn an_own_state_is_written_back_over_the_terraform_value_blocks_included() {
        let config = Value::from_json(&serde_json::json!({
            "name": "p",
            "project": null,
            "node_config": [{"machine_type": "m", "guest_accelerator": [{"type": "nvidia-l4", "count": 1}], "taint": []}]
        }));
        let own = GKE_LIKE.own_state(&config);
        let mut live = own.clone();
        crate::check::set(&mut live, "id", Value::string("loc/ml/p"));
        let back = GKE_LIKE.terraform_state(&live, &config);
        assert_eq!(
            back.to_json(),
            serde_json::json!({
                "name": "p",
                "project": null,
                "node_config": [{"machine_type": "m", "guest_accelerator": [{"type": "nvidia-l4", "count": 1}], "taint": []}],
                "id": "loc/ml/p", "creation_token": null, "replacing": null, "replacing_mark": null, "rollout": null
            })
        );
        // A pool without GPUs lives: its accelerator list is emptied.
        crate::check::set(&mut live, "accelerator", Value::Null);
        let back = GKE_LIKE.terraform_state(&live, &config);
        assert_eq!(
            back.to_json()["node_config"][0]["guest_accelerator"],
            serde_json::json!([])
        );
        // An import's state is built from nothing.
        let imported = GKE_LIKE.terraform_state(&own, &Value::Null);
        assert_eq!(
            imported.to_json()["node_config"][0]["guest_accelerator"][0]["type"],
            "nvidia-l4"
        );
    }
}
