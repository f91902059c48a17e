//! The configuration of a stack: every declaration of every module, with its source location.
//!
//! Loading checks structure only (block kinds, labels, argument names, meta-arguments); values
//! are evaluated later, in graph order.

pub mod json;
pub mod load;
pub mod remote;
pub mod terraform;
pub mod version;

pub use load::{
    Files, STACK_FILES, Syntax, load_stack, load_stack_expanded, load_stack_from, parse_file,
    parse_json_variables, stack_file_syntax,
};

use crate::source::{FileId, Span};
use gpustack_protocol::Type;
use hcl_edit::Span as _;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Body;
use indexmap::IndexMap;
use std::path::PathBuf;

/// An expression together with the file its spans point into.
#[derive(Debug, Clone)]
pub struct Expr {
    pub expr: Expression,
    pub file: FileId,
}

impl Expr {
    pub fn span(&self) -> Span {
        span_of(self.file, self.expr.span())
    }
}

pub fn span_of(file: FileId, range: Option<std::ops::Range<usize>>) -> Span {
    Span::new(file, range.unwrap_or(0..0))
}

/// A block body kept for later decoding against a schema (resources, providers, backends).
#[derive(Debug, Clone)]
pub struct BodyRef {
    pub body: Body,
    pub file: FileId,
    /// Where the block starts, for "missing argument" diagnostics.
    pub span: Span,
}

/// The values given to a stack's root variables, which the loader reads for the `const`
/// ones: a module's `source` and `version` may use them (Terraform 1.15).
pub trait RootValues {
    /// The value given to root variable `name` of type `ty`; `None` when none was given (its
    /// default stands).
    fn value(&self, name: &str, ty: &Type) -> Option<gpustack_protocol::Value>;
}

/// No value given to any root variable: defaults only.
pub struct NoRootValues;

impl RootValues for NoRootValues {
    fn value(&self, _: &str, _: &Type) -> Option<gpustack_protocol::Value> {
        None
    }
}

/// A module's declarations of one kind by name, in the order written (SipHash over the
/// resource map was a fiftieth of a 100,000-resource `validate`).
pub use gpustack_protocol::Names;

/// One module instance of the stack; the root is index 0.
#[derive(Debug)]
pub struct Module {
    /// `[]` for the root, `["gpu_operator"]`, `["a", "b"]` for nested calls.
    pub path: Vec<String>,
    pub dir: PathBuf,
    pub parent: Option<usize>,
    /// Calls without count/for_each: the module each loads.
    pub children: Names<usize>,
    /// Repeated calls: their instances' modules, in key order.
    pub instances: Names<Vec<usize>>,
    /// Set when this module is an instance of a repeated call.
    pub instance: Option<ModuleInstance>,
    pub variables: Names<Variable>,
    pub locals: Names<Local>,
    pub outputs: Names<Output>,
    /// Keyed by `name` or `name.alias`.
    pub providers: Names<ProviderBlock>,
    /// Keyed by `type.name`.
    pub resources: Names<Resource>,
    /// Keyed by `type.name` (without the `data.` prefix).
    pub data: Names<Resource>,
    pub calls: Names<ModuleCall>,
    pub settings: Option<GpustackBlock>,
    /// What the module's `terraform` blocks say, all of them together.
    pub terraform: Option<Box<TerraformSettings>>,
    /// `import` blocks (the root module only, as in Terraform).
    pub imports: Vec<Import>,
    /// `moved` blocks, with addresses relative to this module.
    pub moves: Vec<Moved>,
    /// `removed` blocks, with addresses relative to this module.
    pub removals: Vec<Removed>,
    /// `check` blocks: assertions reported as warnings, never blocking a plan or apply.
    pub checks: Vec<Check>,
    /// Its files did not load whole (a syntax error, a block refused): what it declares is
    /// not all it means to, so a reference to a declaration it lacks is unknown rather than a
    /// second error after the first.
    pub incomplete: bool,
}

/// `condition = ...` with `error_message = ...`: a `precondition`, `postcondition` or a
/// check's `assert`.
#[derive(Debug, Clone)]
pub struct Condition {
    pub condition: Expr,
    pub error_message: Expr,
}

/// `check "name" { assert { ... } }`.
#[derive(Debug)]
pub struct Check {
    pub name: String,
    pub span: Span,
    pub asserts: Vec<Condition>,
}

/// `import { to = ADDRESS, id = "..." }`, optionally `for_each`.
#[derive(Debug)]
pub struct Import {
    pub span: Span,
    /// The target address, a traversal whose index expressions may use `each`.
    pub to: Expr,
    pub id: ImportBy,
    pub for_each: Option<Expr>,
}

/// How an import names its object: the provider's import ID, or (Terraform 1.12) the
/// object's identity attributes, which the provider turns into the ID.
#[derive(Debug)]
pub enum ImportBy {
    Id(Expr),
    Identity(Expr),
}

impl ImportBy {
    /// The expression, whichever form.
    pub fn expr(&self) -> &Expr {
        match self {
            ImportBy::Id(e) | ImportBy::Identity(e) => e,
        }
    }
}

/// `moved { from = ADDRESS, to = ADDRESS }`: the state's object at `from` is now `to`.
#[derive(Debug)]
pub struct Moved {
    pub span: Span,
    pub from: Expr,
    pub to: Expr,
}

/// `removed { from = ADDRESS, lifecycle { destroy = false } }`: forget without destroying.
#[derive(Debug)]
pub struct Removed {
    pub span: Span,
    pub from: Expr,
    /// `lifecycle { destroy = true }` destroys instead, as a deleted block would.
    pub destroy: bool,
}

impl Module {
    /// The name of the call that loads this module in its parent.
    pub fn call_name(&self) -> Option<&str> {
        match &self.instance {
            Some(instance) => Some(&instance.call),
            None => self.path.last().map(String::as_str),
        }
    }

    /// The modules a call of this module loads: one, or one per instance.
    pub fn called(&self, call: &str) -> Vec<usize> {
        match (self.children.get(call), self.instances.get(call)) {
            (Some(&child), _) => vec![child],
            (None, Some(instances)) => instances.clone(),
            (None, None) => Vec::new(),
        }
    }

    /// The address prefix of everything in this module: `""` or `module.a.module.b.`.
    pub fn prefix(&self) -> String {
        self.path.iter().map(|p| format!("module.{p}.")).collect()
    }

    /// Where the stack's state lives: the `gpustack` block's backend, else the `terraform`
    /// block's (a stack may not have both).
    pub fn backend(&self) -> Option<&BackendBlock> {
        self.settings
            .as_ref()
            .and_then(|s| s.backend.as_ref())
            .or_else(|| self.terraform.as_ref().and_then(|t| t.backend.as_ref()))
    }

    /// How states and plans are encrypted: the `gpustack` block's `encryption`, else the
    /// `terraform` block's, as OpenTofu writes it (a stack may not have both).
    pub fn encryption(&self) -> Option<&BodyRef> {
        self.settings
            .as_ref()
            .and_then(|s| s.encryption.as_ref())
            .or_else(|| self.terraform.as_ref().and_then(|t| t.encryption.as_ref()))
    }
}

#[derive(Debug)]
pub struct Variable {
    pub name: String,
    pub span: Span,
    pub ty: Type,
    /// It has a `type` argument. Without one, a value given as text (`-var`, `TF_VAR_`) is a
    /// string, whatever it looks like, as Terraform reads it.
    pub typed: bool,
    pub default: Option<Expr>,
    pub description: Option<String>,
    pub sensitive: bool,
    pub nullable: bool,
    pub validations: Vec<Validation>,
    /// `deprecated = "..."` (Terraform 1.15): setting the variable is a warning that says so.
    pub deprecated: Option<String>,
    /// `ephemeral = true`: its value is never written to a plan or the state, and may reach
    /// only what is ephemeral too (Terraform 1.10).
    pub ephemeral: bool,
    /// `const = true` (Terraform 1.15): known while the stack is loaded, so that a module's
    /// `source` and `version` may use it.
    pub constant: bool,
}

#[derive(Debug)]
pub struct Validation {
    pub condition: Expr,
    pub error_message: Expr,
}

#[derive(Debug)]
pub struct Local {
    pub name: String,
    pub span: Span,
    pub expr: Expr,
}

#[derive(Debug)]
pub struct Output {
    pub name: String,
    pub span: Span,
    pub value: Expr,
    pub description: Option<String>,
    pub sensitive: bool,
    /// `deprecated = "..."` (Terraform 1.15): a reference to it is a warning that says so.
    pub deprecated: Option<String>,
    /// `ephemeral = true`: a child module's output that may carry ephemeral values; never
    /// recorded.
    pub ephemeral: bool,
    /// `type = ...` (Terraform 1.15): the value is converted to it, or refused.
    pub ty: Option<Type>,
    pub depends_on: Vec<Reference>,
    /// Checked before the value is recorded; a false one is an error.
    pub preconditions: Vec<Condition>,
}

#[derive(Debug)]
pub struct ProviderBlock {
    pub name: String,
    pub alias: Option<String>,
    pub body: BodyRef,
}

/// A `provider = azure.west` selection or a `providers = { azure = azure.west }` entry.
#[derive(Debug, Clone)]
pub struct ProviderRef {
    pub name: String,
    pub alias: Option<String>,
    pub span: Span,
}

impl ProviderRef {
    pub fn key(&self) -> String {
        provider_key(&self.name, self.alias.as_deref())
    }
}

pub fn provider_key(name: &str, alias: Option<&str>) -> String {
    match alias {
        Some(alias) => format!("{name}.{alias}"),
        None => name.to_owned(),
    }
}

pub use gpustack_protocol::ResourceMode;

#[derive(Debug)]
pub struct Resource {
    pub mode: ResourceMode,
    pub type_name: String,
    pub name: String,
    /// The block header: `resource "aks_nodepool" "t4"`.
    pub span: Span,
    pub type_span: Span,
    /// Arguments and nested blocks, without meta-arguments.
    pub body: BodyRef,
    // Boxed, with the lifecycle: most resources have none of them, and a resource's size is
    // what the loaded stack's largest map holds per resource.
    pub count: Option<Box<Expr>>,
    pub for_each: Option<Box<Expr>>,
    pub depends_on: Vec<Reference>,
    pub provider: Option<ProviderRef>,
    /// None for a resource without a lifecycle block: see [`Resource::lifecycle`].
    pub lifecycle_block: Option<Box<Lifecycle>>,
    /// A data source declared inside this check block: a failure to read it is a warning of
    /// the check, never an error of the plan.
    pub check: Option<Box<str>>,
    /// `provisioner` blocks, in the order written; boxed like the lifecycle (see
    /// [`Resource::provisioners`]).
    pub provisioner_blocks: Option<Box<Vec<Provisioner>>>,
}

/// A `provisioner "local-exec" { ... }` block of a managed resource.
#[derive(Debug, Clone)]
pub struct Provisioner {
    /// `local-exec`: the one kind that runs where gpustack runs.
    pub kind: String,
    pub span: Span,
    /// `when = destroy`: run before the object is destroyed, else after it is created.
    pub when_destroy: bool,
    /// `on_failure = continue`: a failed command is a warning; else the apply fails (and a
    /// created object is tainted).
    pub continue_on_failure: bool,
    /// The block's arguments (`command`, `interpreter`, `working_dir`, `environment`,
    /// `quiet`), `when` and `on_failure` removed.
    pub body: BodyRef,
}

impl Resource {
    /// The `provisioner` blocks, in the order written.
    pub fn provisioners(&self) -> &[Provisioner] {
        self.provisioner_blocks
            .as_deref()
            .map_or(&[], Vec::as_slice)
    }

    pub fn lifecycle(&self) -> &Lifecycle {
        static NONE: Lifecycle = Lifecycle {
            prevent_destroy: None,
            skip_destroy: false,
            create_before_destroy: false,
            ignore_changes: Vec::new(),
            ignore_all_changes: false,
            replace_triggered_by: Vec::new(),
            enabled: None,
            preconditions: Vec::new(),
            postconditions: Vec::new(),
        };
        self.lifecycle_block.as_deref().unwrap_or(&NONE)
    }

    /// `aks_nodepool.t4` or `data.kubernetes_nodes.gpu`, without module prefix.
    pub fn local_address(&self) -> String {
        match self.mode {
            ResourceMode::Managed => format!("{}.{}", self.type_name, self.name),
            ResourceMode::Data => format!("data.{}.{}", self.type_name, self.name),
        }
    }
}

#[derive(Debug, Default)]
pub struct Lifecycle {
    /// Refuse any plan that destroys an instance: a literal, or (OpenTofu 1.12) an expression
    /// of the module's variables and locals, known at plan.
    pub prevent_destroy: Option<Expr>,
    /// `destroy = false` (OpenTofu 1.12): where an instance would be destroyed (a destroy
    /// plan, its block removed) it is forgotten instead, the object left as it is; the state
    /// records it so that a removed block's instances are forgotten too.
    pub skip_destroy: bool,
    pub create_before_destroy: bool,
    /// The paths of `ignore_changes` (`node_count`, `tags["team"]`, `member[0].weight`), with
    /// their spans; a path's first step is always an attribute name.
    pub ignore_changes: Vec<(gpustack_protocol::Path, Span)>,
    pub ignore_all_changes: bool,
    /// `replace_triggered_by`: references to managed resources of the same module (an
    /// instance, `TYPE.NAME[count.index]`, or one of its attributes); the resource is replaced
    /// when what one names is planned to change.
    pub replace_triggered_by: Vec<Expr>,
    /// `enabled` (OpenTofu 1.11): false plans no instance; references then see null.
    pub enabled: Option<Expr>,
    /// Checked before each instance is planned.
    pub preconditions: Vec<Condition>,
    /// Checked on each planned instance (`self`), and after apply where the plan could not
    /// tell.
    pub postconditions: Vec<Condition>,
}

/// A static reference as written in `depends_on`: `aks_nodepool.t4`, `module.ts`, `data.x.y`.
#[derive(Debug, Clone)]
pub struct Reference {
    pub parts: Vec<String>,
    pub span: Span,
}

#[derive(Debug)]
pub struct ModuleCall {
    pub name: String,
    pub span: Span,
    /// As written, or as its const variables make it (empty until then, and when refused).
    pub source: String,
    pub source_span: Span,
    /// A source that reads const variables (Terraform 1.15), resolved while loading.
    pub source_expr: Option<Expr>,
    /// A registry module's version constraint (`~> 20.0`), as written or from const variables.
    pub version: Option<String>,
    pub version_expr: Option<Expr>,
    /// Input variable values, by variable name: (value, span of the argument name).
    pub args: IndexMap<String, (Expr, Span)>,
    /// `providers = { child_name = parent.ref }`, keyed by the child's provider key.
    pub providers: IndexMap<String, ProviderRef>,
    pub depends_on: Vec<Reference>,
    /// `count` / `for_each`: one module instance per element, each a module of the stack.
    pub count: Option<Expr>,
    pub for_each: Option<Expr>,
}

impl ModuleCall {
    pub fn is_repeated(&self) -> bool {
        self.count.is_some() || self.for_each.is_some()
    }
}

/// Which instance of a repeated module call a module is.
#[derive(Debug, Clone)]
pub struct ModuleInstance {
    /// The call's name in the parent module.
    pub call: String,
    /// `[0]` or `["t4"]`, as its addresses show it.
    pub key: String,
    /// `count.index`, for a call with count.
    pub count_index: Option<usize>,
    /// `each.key` and `each.value`, for a call with for_each.
    pub each: Option<(String, gpustack_protocol::Value)>,
}

/// The instances a repeated call expands to, by (the calling module's path, the call's name):
/// found by evaluating count/for_each before the stack is loaded with them.
pub type ModuleExpansions = std::collections::HashMap<(Vec<String>, String), Vec<ModuleInstance>>;

#[derive(Debug)]
pub struct GpustackBlock {
    pub span: Span,
    pub backend: Option<BackendBlock>,
    /// `encryption { ... }`: how states and plans are encrypted (see [`encryption`]).
    pub encryption: Option<BodyRef>,
    pub required_version: Option<(String, Span)>,
}

/// A module's `terraform` blocks (Terraform allows several; they are read together).
#[derive(Debug)]
pub struct TerraformSettings {
    /// The first block's header.
    pub span: Span,
    /// `required_providers`, in the order written.
    pub required_providers: Vec<RequiredProvider>,
    /// `backend "KIND"`, its Terraform arguments mapped onto gpustack's backend of that kind.
    pub backend: Option<BackendBlock>,
    /// `encryption { ... }`, as OpenTofu writes it in the terraform block.
    pub encryption: Option<BodyRef>,
}

/// One `required_providers` entry: `kubernetes = { source = "hashicorp/kubernetes" }`.
#[derive(Debug, Clone)]
pub struct RequiredProvider {
    /// The local name the module gives the provider.
    pub name: String,
    pub span: Span,
    /// `NAMESPACE/TYPE` (any host dropped, lower case); `hashicorp/NAME` when not written.
    pub source: String,
    /// The `source` value, or the entry when it has none.
    pub source_span: Span,
    /// The `version` constraint as written: gpustack's providers are built in, so it is only
    /// shown, never checked.
    pub version: Option<String>,
}

/// A state backend. A `terraform { backend ... }` block's is held with gpustack's argument
/// names, so that the two kinds of block configure one thing.
#[derive(Debug)]
pub struct BackendBlock {
    pub kind: String,
    pub kind_span: Span,
    pub body: BodyRef,
}

/// Every module instance of a stack, root first, children after their parent.
#[derive(Debug, Default)]
pub struct Stack {
    pub modules: Vec<Module>,
}

impl Stack {
    pub fn root(&self) -> &Module {
        &self.modules[0]
    }

    /// Every managed and data resource block with its address in the stack (module prefix
    /// included) and the index of its module.
    pub fn resources_by_address(&self) -> impl Iterator<Item = (String, (usize, &Resource))> {
        self.modules.iter().enumerate().flat_map(|(i, m)| {
            let prefix = m.prefix();
            m.resources
                .values()
                .map(move |r| (format!("{prefix}{}", r.local_address()), (i, r)))
        })
    }
}

/// [`load_stack_expanded`] against the providers of `providers`: files in Terraform's JSON
/// syntax are read with their schemas (which properties of a resource are nested blocks), and
/// `required_providers` is checked against them. Without them, JSON objects are arguments and
/// `required_providers` is not checked.
pub fn load_stack_with(
    files: &Files,
    dir: &std::path::Path,
    sources: &mut crate::source::SourceMap,
    diags: &mut crate::diag::Diags,
    expansions: &ModuleExpansions,
    providers: Option<&gpustack_protocol::Registry>,
    root_values: &dyn RootValues,
) -> Stack {
    let stack = load::load_tree(
        files,
        dir,
        sources,
        diags,
        expansions,
        providers,
        root_values,
    );
    if let Some(registry) = providers {
        terraform::check_required_providers(&stack, registry, diags);
    }
    stack
}
