//! The `encryption` block of `gpustack { ... }`, and `GPUSTACK_ENCRYPTION` (the same block's
//! body, from the environment, laid over it: a key provider, method, `state` or `plan` of the
//! environment replaces the stack's of the same kind and name), checked and evaluated into the
//! state crate's [`EncryptionConfig`].
//!
//! Its arguments are literals and root variables (`var.NAME`) only: the state is read through
//! it, before anything else is evaluated.
//!
//! **Invariant:** no diagnostic quotes a passphrase; the values evaluated here go nowhere but
//! into the configuration.

use gpustack_lang::diag::{Diags, suggest};
use gpustack_lang::expr::eval::{EvalError, Evaluator, Scope};
use gpustack_lang::source::{FileId, Span};
use gpustack_protocol::Value;
use gpustack_state::encryption::{
    AwsKmsConfig, EncryptionConfig, HashFunction, KeyProviderConfig, MAX_ITERATIONS,
    MAX_SALT_LENGTH, MIN_ITERATIONS, MIN_PASSPHRASE_LEN, MIN_SALT_LENGTH, MethodConfig, Passphrase,
    Pbkdf2Config, TargetConfig,
};
use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, TraversalOperator};
use hcl_edit::structure::{Attribute, Block, Body, Structure};
use indexmap::IndexMap;
use std::borrow::Cow;
use std::ops::Range;

const KEY_PROVIDERS: &[&str] = &["pbkdf2", "aws_kms"];
const METHODS: &[&str] = &["aes_gcm", "unencrypted"];
const BLOCKS: &[&str] = &["key_provider", "method", "state", "plan"];

/// One body of an `encryption` block: the stack's, then the environment's.
#[derive(Clone, Copy)]
pub struct Part<'a> {
    pub body: &'a Body,
    pub file: FileId,
}

/// Root variables as the block sees them: a value, `Unknown` where only the structure is being
/// checked, or why there is none (a summary and a detail).
pub type Variables<'a> = &'a dyn Fn(&str) -> Result<Value, (String, String)>;

/// Checks and evaluates the parts; `None` when there were errors, or unknown values (a
/// structural check with variables unknown).
pub fn evaluate(
    parts: &[Part<'_>],
    variables: Variables<'_>,
    diags: &mut Diags,
) -> Option<EncryptionConfig> {
    let errors = diags.error_count();
    let mut checker = Checker {
        diags,
        variables,
        unknown: false,
    };
    let config = checker.config(parts);
    let complete = !checker.unknown;
    (diags.error_count() == errors && complete).then_some(config)
}

struct Checker<'d, 'v> {
    diags: &'d mut Diags,
    variables: Variables<'v>,
    /// A value was unknown: the configuration is not complete.
    unknown: bool,
}

/// A declared block with the file it is in.
type Declared<'a> = (&'a Block, FileId);

struct VarScope<'v>(Variables<'v>);

impl Scope for VarScope<'_> {
    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        match names {
            ["var", name, ..] => (self.0)(name)
                .map(|v| (Cow::Owned(v), 2))
                .map_err(|(summary, detail)| EvalError::new(range, summary, detail)),
            _ => Err(EvalError::new(
                range,
                "Invalid reference in encryption",
                format!(
                    "\"{}\" cannot be used here: the encryption block is evaluated before anything else, from literals and root variables (var.NAME) only.",
                    names.join(".")
                ),
            )),
        }
    }
}

impl<'a> Checker<'_, '_> {
    fn error(&mut self, file: FileId, range: Option<Range<usize>>, summary: &str, detail: String) {
        self.diags
            .error(range.map(|r| Span::new(file, r)), summary, detail);
    }

    fn config(&mut self, parts: &[Part<'a>]) -> EncryptionConfig {
        let mut providers: IndexMap<String, Declared<'a>> = IndexMap::new();
        let mut methods: IndexMap<String, Declared<'a>> = IndexMap::new();
        let mut state: Option<Declared<'a>> = None;
        let mut plan: Option<Declared<'a>> = None;
        for part in parts {
            let file = part.file;
            let mut here: std::collections::HashSet<String> = Default::default();
            for structure in part.body.iter() {
                let block = match structure {
                    Structure::Attribute(attr) => {
                        self.error(
                            file,
                            attr.key.span(),
                            "Unsupported argument",
                            format!(
                                "The encryption block takes blocks only: {}.",
                                BLOCKS.join(", ")
                            ),
                        );
                        continue;
                    }
                    Structure::Block(block) => block,
                };
                let kind = block.ident.as_str();
                let (table, kinds) = match kind {
                    "key_provider" => (&mut providers, KEY_PROVIDERS),
                    "method" => (&mut methods, METHODS),
                    "state" | "plan" => {
                        if let Some(label) = block.labels.first() {
                            self.error(
                                file,
                                label.span(),
                                "Extraneous label",
                                format!("A {kind} block takes no labels."),
                            );
                        }
                        if !here.insert(kind.to_owned()) {
                            self.error(
                                file,
                                block.ident.span(),
                                &format!("Duplicate {kind} block"),
                                format!("The encryption block has one {kind} block."),
                            );
                        }
                        let slot = if kind == "state" {
                            &mut state
                        } else {
                            &mut plan
                        };
                        *slot = Some((block, file));
                        continue;
                    }
                    other => {
                        self.error(
                            file,
                            block.ident.span(),
                            "Unsupported block type",
                            format!(
                                "Blocks of type \"{other}\" are not expected in the encryption block.{}",
                                suggest(other, BLOCKS.iter().copied())
                            ),
                        );
                        continue;
                    }
                };
                let labels: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
                let [type_name, name] = labels.as_slice() else {
                    self.error(
                        file,
                        block.ident.span(),
                        "Wrong number of labels",
                        format!("A {kind} block has two labels: its type and its name, as {kind} \"{}\" \"NAME\".", kinds[0]),
                    );
                    continue;
                };
                if !kinds.contains(type_name) {
                    self.error(
                        file,
                        block.labels[0].span(),
                        &format!("Unknown {kind} type"),
                        format!(
                            "There is no {kind} \"{type_name}\"; they are {}.{}",
                            kinds.join(" and "),
                            suggest(type_name, kinds.iter().copied())
                        ),
                    );
                    continue;
                }
                let key = format!("{type_name}.{name}");
                if !here.insert(format!("{kind}.{key}")) {
                    self.error(
                        file,
                        block.labels[1].span(),
                        &format!("Duplicate {kind}"),
                        format!("{kind}.{key} is declared twice."),
                    );
                }
                table.insert(key, (block, file));
            }
        }
        let mut config = EncryptionConfig::default();
        for (key, (block, file)) in &providers {
            if let Some(provider) = self.key_provider(key, block, *file) {
                config.key_providers.insert(key.clone(), provider);
            }
        }
        for (key, (block, file)) in &methods {
            if let Some(method) = self.method(key, block, *file, &providers) {
                config.methods.insert(key.clone(), method);
            }
        }
        let declared: Vec<&str> = methods.keys().map(String::as_str).collect();
        config.state =
            state.and_then(|(b, f)| self.target("state", b, f, &config.methods, &declared));
        config.plan = plan.and_then(|(b, f)| self.target("plan", b, f, &config.methods, &declared));
        config
    }

    /// Reports arguments and blocks of `body` that are not among those allowed.
    fn only(&mut self, body: &Body, file: FileId, context: &str, attrs: &[&str], blocks: &[&str]) {
        let mut seen = std::collections::HashSet::new();
        for structure in body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let key = attr.key.as_str();
                    if !attrs.contains(&key) {
                        self.error(
                            file,
                            attr.key.span(),
                            "Unsupported argument",
                            format!(
                                "An argument named \"{key}\" is not expected in {context}.{}",
                                suggest(key, attrs.iter().copied())
                            ),
                        );
                    } else if !seen.insert(key) {
                        self.error(
                            file,
                            attr.key.span(),
                            "Duplicate argument",
                            format!("The argument \"{key}\" was already set in {context}."),
                        );
                    }
                }
                Structure::Block(block) => {
                    let kind = block.ident.as_str();
                    if !blocks.contains(&kind) {
                        self.error(
                            file,
                            block.ident.span(),
                            "Unsupported block type",
                            format!(
                                "Blocks of type \"{kind}\" are not expected in {context}.{}",
                                suggest(kind, blocks.iter().copied())
                            ),
                        );
                    }
                }
            }
        }
    }

    /// An argument's value; `None` when it is absent, failed, or unknown.
    fn value(&mut self, attr: &Attribute, file: FileId) -> Option<Value> {
        match Evaluator::new(&VarScope(self.variables)).eval(&attr.value) {
            Ok(value) if value.is_unknown() => {
                self.unknown = true;
                None
            }
            Ok(value) => Some(value),
            Err(err) => {
                self.error(file, err.range, &err.summary, err.detail);
                None
            }
        }
    }

    fn string(&mut self, body: &Body, file: FileId, name: &str) -> Option<String> {
        let attr = body.get_attribute(name)?;
        match self.value(attr, file)?.peel() {
            Value::String(s) => Some(s.clone()),
            other => {
                let found = other.type_name();
                self.error(
                    file,
                    attr.value.span(),
                    "Invalid value",
                    format!("{name} must be a string, not {found}."),
                );
                None
            }
        }
    }

    fn whole_number(&mut self, body: &Body, file: FileId, name: &str) -> Option<u64> {
        let attr = body.get_attribute(name)?;
        match self.value(attr, file)?.peel() {
            Value::Number(n) if n.to_i64().is_some_and(|i| i >= 0) => {
                n.to_i64().and_then(|i| u64::try_from(i).ok())
            }
            _ => {
                self.error(
                    file,
                    attr.value.span(),
                    "Invalid value",
                    format!("{name} must be a whole number."),
                );
                None
            }
        }
    }

    fn required(&mut self, block: &Block, file: FileId, name: &str, context: &str) -> bool {
        if block.body.get_attribute(name).is_some() {
            return true;
        }
        self.error(
            file,
            block.ident.span(),
            "Missing required argument",
            format!("The argument \"{name}\" is required in {context}."),
        );
        false
    }

    /// `ROOT.KIND.NAME`, as `KIND.NAME`.
    fn reference(
        &mut self,
        attr: &Attribute,
        file: FileId,
        root: &str,
        example: &str,
    ) -> Option<String> {
        let names = match &attr.value {
            Expression::Traversal(t) => match &t.expr {
                Expression::Variable(v) => {
                    let mut names = vec![v.as_str().to_owned()];
                    for op in &t.operators {
                        match op.value() {
                            TraversalOperator::GetAttr(ident) => {
                                names.push(ident.as_str().to_owned())
                            }
                            _ => names.clear(),
                        }
                    }
                    names
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        match names.as_slice() {
            [r, kind, name] if r == root => Some(format!("{kind}.{name}")),
            _ => {
                self.error(
                    file,
                    attr.value.span(),
                    "Invalid reference",
                    format!(
                        "{} must name a {root} block, as {example}.",
                        attr.key.as_str()
                    ),
                );
                None
            }
        }
    }

    // Long by design: one arm per key provider kind, each checking its own arguments.
    fn key_provider(
        &mut self,
        key: &str,
        block: &Block,
        file: FileId,
    ) -> Option<KeyProviderConfig> {
        let context = format!("key_provider.{key}");
        let body = &block.body;
        if key.starts_with("pbkdf2.") {
            self.only(
                body,
                file,
                &context,
                &[
                    "passphrase",
                    "iterations",
                    "hash_function",
                    "salt_length",
                    "key_length",
                ],
                &[],
            );
            let present = self.required(block, file, "passphrase", &context);
            let passphrase = present
                .then(|| self.string(body, file, "passphrase"))
                .flatten();
            let mut config = Pbkdf2Config::new(Passphrase::new(String::new()));
            if let Some(p) = passphrase {
                // Scrubbed from everything the run prints, the excerpts of diagnostics too.
                gpustack_protocol::secrets::remember([&p]);
                let passphrase = Passphrase::new(p);
                if passphrase.len() < MIN_PASSPHRASE_LEN {
                    let span = body
                        .get_attribute("passphrase")
                        .and_then(|a| a.value.span());
                    self.error(
                        file,
                        span,
                        "Passphrase too short",
                        format!(
                            "The passphrase of {context} has {} characters; it must have at least {MIN_PASSPHRASE_LEN}.",
                            passphrase.len()
                        ),
                    );
                }
                config.passphrase = passphrase;
            }
            if let Some(n) = self.whole_number(body, file, "iterations") {
                if n < u64::from(MIN_ITERATIONS) || n > u64::from(MAX_ITERATIONS) {
                    let span = body
                        .get_attribute("iterations")
                        .and_then(|a| a.value.span());
                    self.error(
                        file,
                        span,
                        if n < u64::from(MIN_ITERATIONS) {
                            "Too few iterations"
                        } else {
                            "Too many iterations"
                        },
                        format!(
                            "iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}."
                        ),
                    );
                }
                config.iterations = u32::try_from(n).unwrap_or(u32::MAX);
            }
            if let Some(h) = self.string(body, file, "hash_function") {
                match h.as_str() {
                    "sha256" => config.hash_function = HashFunction::Sha256,
                    "sha512" => config.hash_function = HashFunction::Sha512,
                    other => {
                        let span = body
                            .get_attribute("hash_function")
                            .and_then(|a| a.value.span());
                        self.error(
                            file,
                            span,
                            "Unknown hash function",
                            format!("hash_function is \"sha256\" or \"sha512\", not \"{other}\"."),
                        );
                    }
                }
            }
            if let Some(n) = self.whole_number(body, file, "salt_length") {
                if n < MIN_SALT_LENGTH as u64 || n > MAX_SALT_LENGTH as u64 {
                    let span = body
                        .get_attribute("salt_length")
                        .and_then(|a| a.value.span());
                    self.error(
                        file,
                        span,
                        if n < MIN_SALT_LENGTH as u64 {
                            "Salt too short"
                        } else {
                            "Salt too long"
                        },
                        format!(
                            "salt_length must be between {MIN_SALT_LENGTH} and {MAX_SALT_LENGTH} bytes."
                        ),
                    );
                }
                config.salt_length = usize::try_from(n).unwrap_or(usize::MAX);
            }
            if let Some(n) = self.whole_number(body, file, "key_length")
                && n != 32
            {
                let span = body
                    .get_attribute("key_length")
                    .and_then(|a| a.value.span());
                self.error(
                    file,
                    span,
                    "Unsupported key length",
                    "key_length is 32: aes_gcm encrypts with AES-256.".into(),
                );
            }
            Some(KeyProviderConfig::Pbkdf2(config))
        } else {
            self.only(
                body,
                file,
                &context,
                &["kms_key_id", "key_spec", "region", "endpoint", "profile"],
                &[],
            );
            let present = self.required(block, file, "kms_key_id", &context);
            let kms_key_id = present
                .then(|| self.string(body, file, "kms_key_id"))
                .flatten();
            let key_spec = self
                .string(body, file, "key_spec")
                .unwrap_or_else(|| "AES_256".to_owned());
            if key_spec != "AES_256" {
                let span = body.get_attribute("key_spec").and_then(|a| a.value.span());
                self.error(
                    file,
                    span,
                    "Unsupported key spec",
                    format!("key_spec is \"AES_256\" (aes_gcm encrypts with AES-256), not \"{key_spec}\"."),
                );
            }
            Some(KeyProviderConfig::AwsKms(AwsKmsConfig {
                kms_key_id: kms_key_id.unwrap_or_default(),
                key_spec,
                region: self.string(body, file, "region"),
                endpoint: self.string(body, file, "endpoint"),
                profile: self.string(body, file, "profile"),
            }))
        }
    }

    fn method(
        &mut self,
        key: &str,
        block: &Block,
        file: FileId,
        providers: &IndexMap<String, Declared<'a>>,
    ) -> Option<MethodConfig> {
        let context = format!("method.{key}");
        if key.starts_with("unencrypted.") {
            self.only(&block.body, file, &context, &[], &[]);
            return Some(MethodConfig::Unencrypted);
        }
        self.only(&block.body, file, &context, &["keys"], &[]);
        if !self.required(block, file, "keys", &context) {
            return None;
        }
        let attr = block.body.get_attribute("keys")?;
        let keys = self.reference(attr, file, "key_provider", "key_provider.pbkdf2.NAME")?;
        if !providers.contains_key(&keys) {
            self.error(
                file,
                attr.value.span(),
                "Reference to undeclared key provider",
                format!(
                    "{context} takes its keys from key_provider.{keys}, which is not declared.{}",
                    suggest(&keys, providers.keys().map(String::as_str))
                ),
            );
            return None;
        }
        Some(MethodConfig::AesGcm { keys })
    }

    /// A `method = method.KIND.NAME` argument; a method declared but invalid was reported
    /// where it is declared.
    fn method_reference(
        &mut self,
        block: &Block,
        file: FileId,
        context: &str,
        methods: &IndexMap<String, MethodConfig>,
        declared: &[&str],
    ) -> Option<String> {
        if !self.required(block, file, "method", context) {
            return None;
        }
        let attr = block.body.get_attribute("method")?;
        let method = self.reference(attr, file, "method", "method.aes_gcm.NAME")?;
        if !declared.contains(&method.as_str()) {
            self.error(
                file,
                attr.value.span(),
                "Reference to undeclared method",
                format!(
                    "{context} uses method.{method}, which is not declared.{}",
                    suggest(&method, declared.iter().copied())
                ),
            );
            return None;
        }
        methods.contains_key(&method).then_some(method)
    }

    fn target(
        &mut self,
        what: &str,
        block: &Block,
        file: FileId,
        methods: &IndexMap<String, MethodConfig>,
        declared: &[&str],
    ) -> Option<TargetConfig> {
        let context = format!("the {what} block");
        self.only(
            &block.body,
            file,
            &context,
            &["method", "enforced"],
            &["fallback"],
        );
        let method = self.method_reference(block, file, &context, methods, declared);
        let enforced = match block.body.get_attribute("enforced") {
            Some(attr) => match self.value(attr, file).map(|v| v.peel().clone()) {
                Some(Value::Bool(b)) => b,
                Some(_) => {
                    self.error(
                        file,
                        attr.value.span(),
                        "Invalid value",
                        "enforced must be true or false.".into(),
                    );
                    false
                }
                None => false,
            },
            None => false,
        };
        let fallbacks: Vec<&Block> = block.body.get_blocks("fallback").collect();
        if let Some(extra) = fallbacks.get(1) {
            self.error(
                file,
                extra.ident.span(),
                "Duplicate fallback block",
                format!("{context} has at most one fallback."),
            );
        }
        let fallback = match fallbacks.first() {
            Some(fallback) => {
                let context = format!("the {what} block's fallback");
                self.only(&fallback.body, file, &context, &["method"], &[]);
                Some(self.method_reference(fallback, file, &context, methods, declared)?)
            }
            None => None,
        };
        let method = method?;
        if enforced && methods.get(&method) == Some(&MethodConfig::Unencrypted) {
            let span = block
                .body
                .get_attribute("method")
                .and_then(|a| a.value.span());
            self.error(
                file,
                span,
                "Unencrypted method enforced",
                format!("{context} is enforced, so its method cannot be unencrypted."),
            );
            return None;
        }
        Some(TargetConfig {
            method,
            fallback,
            enforced,
        })
    }
}
