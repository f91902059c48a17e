//! A stack loaded and graphed, with the variables of the run: what validate, plan, apply,
//! import and console start from.

mod expand;
mod inputs;

pub use inputs::{InputSource, VariableArg, VariableArgs, auto_variable_files};

use expand::expand_modules;
use inputs::{protect_sensitive_inputs, read_inputs};

use crate::encryption;
use crate::evaluate::{self, Inputs};
use crate::graph::{self, Graph};
use gpustack_lang::config::{self, Stack};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::{self, SourceMap};
use gpustack_protocol::{Diagnostic, Registry};
use std::path::{Path, PathBuf};

/// The values the command line, the environment and the variables files give root
/// variables, as the loader reads them for `const` variables: `init` reads module sources
/// with them.
pub fn root_values(dir: &Path, args: &VariableArgs) -> impl config::RootValues + use<> {
    read_inputs(
        dir,
        &InputSource::Args(args),
        &mut SourceMap::new(dir),
        &mut Diags::default(),
    )
}

/// What a run needs of a stack before it plans: where its state is, how it is encrypted.
#[derive(Debug)]
pub struct StackSettings {
    pub backend: gpustack_state::BackendConfig,
    /// `None` when neither the stack nor the environment configures encryption.
    pub encryption: Option<gpustack_state::EncryptionConfig>,
}

/// Why a stack's settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("the {kind} backend block: {message}")]
    Backend { kind: String, message: String },
    /// Located in the session's sources (the environment's text included).
    #[error(
        "the encryption configuration (the stack's encryption block, GPUSTACK_ENCRYPTION) is invalid"
    )]
    Encryption { diagnostics: Vec<Diagnostic> },
}

/// A stack loaded and graphed, not yet evaluated: what plan and apply start from.
pub struct Session {
    pub(crate) dir: PathBuf,
    pub(crate) sources: SourceMap,
    pub(crate) diags: Diags,
    pub(crate) registry: Registry,
    /// How many files of `sources` belong to the stack (the rest are variable files).
    stack_files: usize,
    pub(crate) stack: Stack,
    pub(crate) graph: Graph,
    pub(crate) inputs: Inputs,
}

impl Session {
    /// A walk whose decoded resources are configuration for providers (unset computed
    /// attributes null, not unknown), with the graph and inputs it walks.
    pub(crate) fn provider_context(&mut self) -> (evaluate::EvalContext<'_>, &Graph, &Inputs) {
        let Session {
            registry,
            sources,
            stack,
            graph,
            inputs,
            diags,
            ..
        } = self;
        let mut walk = evaluate::EvalContext::new(stack, registry, sources, diags);
        walk.unset_computed = gpustack_protocol::Value::Null;
        walk.workspace.clone_from(&inputs.workspace);
        (walk, graph, inputs)
    }

    /// Where the stack keeps its state and how its states and plans are encrypted: what a run
    /// needs to open its backend, asked once. `encryption_environment` is the text of
    /// `GPUSTACK_ENCRYPTION` (the body of an `encryption` block), laid over the stack's.
    pub fn settings(
        &mut self,
        encryption_environment: Option<&str>,
        backend_overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<StackSettings, SettingsError> {
        let backend = self.backend_config(backend_overrides)?;
        let encryption = self
            .encryption_config(encryption_environment)
            .map_err(|diagnostics| SettingsError::Encryption { diagnostics })?;
        Ok(StackSettings {
            backend,
            encryption,
        })
    }

    /// The state backend the root module's `gpustack { backend ... }` or `terraform { backend
    /// ... }` block chooses (local by default), with `overrides` (`init -backend-config`, a
    /// partial configuration as Terraform takes it) laid over the block's attributes. Its
    /// attributes are literals: validation has reported anything else.
    pub fn backend_config(
        &self,
        overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<gpustack_state::BackendConfig, SettingsError> {
        use hcl_edit::structure::Structure;
        let Some(backend) = self.stack.modules.first().and_then(|m| m.backend()) else {
            if overrides.is_empty() {
                return Ok(gpustack_state::BackendConfig::default());
            }
            return Err(SettingsError::Backend {
                kind: "local".to_owned(),
                message:
                    "-backend-config was given, but the stack has no backend block to configure"
                        .to_owned(),
            });
        };
        let mut attributes = serde_json::Map::new();
        for structure in backend.body.body.iter() {
            if let Structure::Attribute(attr) = structure {
                let value = gpustack_lang::expr::eval::Evaluator::new(
                    &gpustack_lang::expr::eval::EmptyScope,
                )
                .eval(&attr.value)
                .map_err(|e| SettingsError::Backend {
                    kind: backend.kind.clone(),
                    message: format!("{}: {}", attr.key.as_str(), e.detail),
                })?;
                attributes.insert(attr.key.as_str().to_owned(), value.to_json());
            }
        }
        attributes.extend(overrides.clone());
        gpustack_state::BackendConfig::from_block(&backend.kind, attributes).map_err(|e| {
            SettingsError::Backend {
                kind: backend.kind.clone(),
                message: e.to_string(),
            }
        })
    }

    /// How states and plans are encrypted: the root module's `gpustack { encryption { ... } }`
    /// with `environment` (the text of `GPUSTACK_ENCRYPTION`, the body of such a block) laid
    /// over it, root variables from this session's inputs. `None` when neither configures
    /// anything. The errors point into the session's sources, the environment's text included.
    pub fn encryption_config(
        &mut self,
        environment: Option<&str>,
    ) -> Result<Option<gpustack_state::EncryptionConfig>, Vec<Diagnostic>> {
        let block = self.stack.modules.first().and_then(|m| m.encryption());
        let mut diags = Diags::default();
        let from_environment = environment
            .filter(|t| !t.trim().is_empty())
            .and_then(|text| {
                let id = self
                    .sources
                    .add_sensitive(Path::new("GPUSTACK_ENCRYPTION"), text.to_owned());
                config::load::parse_source(&self.sources, id, &mut diags).map(|body| (body, id))
            });
        if block.is_none() && from_environment.is_none() && !diags.has_errors() {
            return Ok(None);
        }
        let mut parts = Vec::new();
        if let Some(block) = block {
            parts.push(encryption::Part {
                body: &block.body,
                file: block.file,
            });
        }
        if let Some((body, file)) = &from_environment {
            parts.push(encryption::Part { body, file: *file });
        }
        let (stack, inputs) = (&self.stack, &self.inputs);
        let variables = |name: &str| evaluate::static_root_variable(stack, inputs, name);
        let config = if diags.has_errors() {
            None
        } else {
            encryption::evaluate(&parts, &variables, &mut diags)
        };
        match config {
            Some(config) if !diags.has_errors() => Ok(Some(config)),
            _ => Err(diags.into_sorted(&self.sources)),
        }
    }

    /// Loads `dir` from `files` (the disk, or a plan's snapshot) and builds its graph against
    /// the providers of `registry`.
    pub fn open(
        registry: Registry,
        dir: &Path,
        files: &config::Files,
        inputs: InputSource<'_>,
    ) -> Self {
        // A session is a run for the language's bound on what all evaluations build together:
        // a process that runs several stacks in turn (a fleet, a benchmark) counts each anew.
        gpustack_lang::expr::eval::start_run();
        // The inputs as the loader needs them, for const variables (read again below, into
        // the sources diagnostics point into).
        let early = read_inputs(
            dir,
            &inputs,
            &mut SourceMap::new(dir),
            &mut Diags::default(),
        );
        let mut sources = SourceMap::new(dir);
        let mut diags = Diags::default();
        let stack = config::load_stack_with(
            files,
            dir,
            &mut sources,
            &mut diags,
            &config::ModuleExpansions::new(),
            Some(&registry),
            &early,
        );
        let repeated = stack
            .modules
            .iter()
            .any(|m| m.calls.values().any(config::ModuleCall::is_repeated));
        let mut stack = stack;
        if repeated && !diags.has_errors() {
            let loaded = (
                stack,
                std::mem::replace(&mut sources, SourceMap::new(dir)),
                std::mem::take(&mut diags),
            );
            let (expansions, failures) =
                expand_modules(loaded, files, dir, &registry, &inputs, &early);
            stack = config::load_stack_with(
                files,
                dir,
                &mut sources,
                &mut diags,
                &expansions,
                Some(&registry),
                &early,
            );
            diags.0.extend(failures.0);
        }
        let stack_files = sources.files().count();
        let inputs = read_inputs(dir, &inputs, &mut sources, &mut diags);
        protect_sensitive_inputs(&stack, &inputs, &mut sources, stack_files);
        let graph = graph::build(&stack, &sources, &registry, &mut diags);
        Self {
            dir: dir.to_path_buf(),
            registry,
            sources,
            stack_files,
            stack,
            graph,
            inputs,
            diags,
        }
    }

    /// Every stack file, by path relative to the stack directory, for a plan's snapshot.
    pub fn snapshot_files(&self) -> std::collections::BTreeMap<String, String> {
        self.sources
            .files()
            .take(self.stack_files)
            .map(|(_, f)| {
                (
                    source::relative_to(&f.path, &source::normalize(&self.dir))
                        .to_string_lossy()
                        .replace('\\', "/"),
                    f.shown_text().to_owned(),
                )
            })
            .collect()
    }

    /// Every block that runs commands on this machine, by address, module blocks included:
    /// resources with provisioners (their kinds, run by apply) and `data "external"` (its
    /// program, run by every plan). What `init` names for a reviewer.
    pub fn local_commands(&self) -> Vec<(String, Vec<String>)> {
        let mut commands: Vec<(String, Vec<String>)> = self
            .stack
            .resources_by_address()
            .filter_map(|(address, (_, r))| {
                let mut kinds: Vec<String> =
                    r.provisioners().iter().map(|p| p.kind.clone()).collect();
                kinds.dedup();
                (!kinds.is_empty()).then_some((address, kinds))
            })
            .collect();
        for m in &self.stack.modules {
            let prefix = m.prefix();
            commands.extend(
                m.data
                    .values()
                    .filter(|r| r.type_name == "external")
                    .map(|r| {
                        (
                            format!("{prefix}{}", r.local_address()),
                            vec!["external program, run by plan".to_owned()],
                        )
                    }),
            );
        }
        commands
    }

    /// True when the configuration declares the resource of instance `address`.
    pub fn declares(&self, address: &str) -> bool {
        let resource = gpustack_lang::address::strip_instance_key(address);
        self.stack.modules.iter().any(|m| {
            m.resources
                .values()
                .any(|r| format!("{}{}", m.prefix(), r.local_address()) == resource)
        })
    }

    /// The stack's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether loading, graphing or reading the variables found an error.
    pub fn has_errors(&self) -> bool {
        self.diags.has_errors()
    }

    /// Every file read so far, for rendering diagnostics that point into them.
    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    pub fn diagnostics(self) -> (SourceMap, Vec<Diagnostic>) {
        let diagnostics = self.diags.into_sorted(&self.sources);
        (self.sources, diagnostics)
    }
}
