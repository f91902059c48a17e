//! Provider configurations and resource blocks checked against their schemas and evaluated
//! into the objects providers are sent: arguments, nested blocks (written as blocks, as
//! arguments, or by `dynamic`), and the provider's own checks pointed at the source.

use super::{EvalContext, Expansion, Repetition, schema_of};
use gpustack_lang::config::{BodyRef, Expr, Resource, ResourceMode};
use gpustack_lang::diag::{Diag, closest, suggest};
use gpustack_lang::source::Span;
use gpustack_protocol::{
    BlockNesting, NestedBlock, Schema, Type, ValidateResourceConfigRequest, Value,
};
use hcl_edit::Span as _;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Structure;
use indexmap::IndexMap;
use std::collections::HashSet;

impl EvalContext<'_> {
    /// Checks and evaluates a provider configuration; an implied one is empty.
    pub(crate) fn provider(
        &mut self,
        module: usize,
        key: &str,
        span: Span,
        implied: bool,
    ) -> Option<Value> {
        let name = key.split('.').next().unwrap_or(key);
        let schema = self.registry.config_schema(name).cloned()?;
        if implied {
            let missing: Vec<&str> = schema
                .attributes
                .iter()
                .filter(|(_, a)| a.required)
                .map(|(k, _)| k.as_str())
                .collect();
            if !missing.is_empty() {
                self.diags.error(
                    span,
                    "Missing provider configuration",
                    format!("This needs provider \"{name}\", which requires {}: add a provider \"{name}\" block.", missing.join(", ")),
                );
            }
            return Some(Value::Object(
                schema
                    .attributes
                    .keys()
                    .map(|k| (k.clone(), Value::Null))
                    .collect(),
            ));
        }
        let block = &self.stack.modules[module].providers[key];
        let config = self.decode(
            module,
            &block.body,
            &schema,
            None,
            &format!("provider \"{name}\""),
        );
        if let Some(provider) = self.registry.provider(name) {
            let response = provider.validate_resource_config(ValidateResourceConfigRequest {
                type_name: gpustack_protocol::PROVIDER_CONFIG,
                config: &config,
            });
            for d in response.diagnostics {
                let span = d
                    .attribute
                    .as_deref()
                    .and_then(|path| attribute_span(&block.body, path))
                    .unwrap_or(span);
                self.diags.push(Diag {
                    severity: d.severity,
                    summary: d.summary,
                    detail: d.detail,
                    span: Some(span),
                });
            }
        }
        Some(config)
    }

    pub(super) fn resource(&mut self, module: usize, r: &Resource) -> (Value, Option<Vec<String>>) {
        let Some(schema) = schema_of(self.registry, r) else {
            self.type_not_served(r);
            return (Value::Unknown, None);
        };
        for (path, span) in &r.lifecycle().ignore_changes {
            let Some(gpustack_protocol::PathStep::Key(attr)) = path.first() else {
                continue;
            };
            if !schema.attributes.contains_key(attr) && !schema.blocks.contains_key(attr) {
                self.diags.error(
                    *span,
                    "Unsupported attribute",
                    format!(
                        "{} has no attribute \"{attr}\" to ignore.{}",
                        r.type_name,
                        suggest(attr, schema.attributes.keys().map(String::as_str))
                    ),
                );
            }
        }
        let expansion = self.expansion(module, r);
        let context = format!("a {} block", r.type_name);
        let instance = |walk: &mut Self, repetition: Option<Repetition>| -> Value {
            let config = walk.decode(module, &r.body, schema, repetition, &context);
            walk.provider_checks(r, &config);
            walk.out.resources += 1;
            config
        };
        match expansion {
            Expansion::Single => (instance(self, None), None),
            Expansion::Disabled => (Value::Null, Some(Vec::new())),
            Expansion::Count(n) => {
                let values = (0..n)
                    .map(|i| {
                        instance(
                            self,
                            Some(Repetition {
                                count_index: Some(Value::number(i as f64)),
                                each: None,
                                ..Default::default()
                            }),
                        )
                    })
                    .collect();
                (
                    Value::List(values),
                    Some((0..n).map(|i| format!("[{i}]")).collect()),
                )
            }
            Expansion::ForEach(items) => {
                let keys = items
                    .keys()
                    .map(|k| format!("[{}]", Value::string(k.clone())))
                    .collect();
                let values = items
                    .into_iter()
                    .map(|(k, v)| {
                        let value = instance(
                            self,
                            Some(Repetition {
                                count_index: None,
                                each: Some((Value::String(k.clone()), v)),
                                ..Default::default()
                            }),
                        );
                        (k, value)
                    })
                    .collect();
                (Value::Object(values), Some(keys))
            }
            Expansion::Unknown | Expansion::Invalid => {
                let repetition = Repetition {
                    count_index: r.count.as_deref().map(|_| Value::Unknown),
                    each: r
                        .for_each
                        .as_ref()
                        .map(|_| (Value::Unknown, Value::Unknown)),
                    ..Repetition::default()
                };
                let config = self.decode(module, &r.body, schema, Some(repetition), &context);
                self.provider_checks(r, &config);
                (Value::Unknown, None)
            }
        }
    }

    // Long by design: one pass over the body in source order, attributes and blocks deciding
    // together what is set, misspelt, duplicated or missing; split, each part would need the
    // whole of that state.
    /// Checks a body against a schema and evaluates it into an object with every attribute of
    /// the schema: configured values, unknown for unset computed ones, null otherwise.
    pub(crate) fn decode(
        &mut self,
        module: usize,
        body: &BodyRef,
        schema: &Schema,
        repetition: Option<Repetition>,
        context: &str,
    ) -> Value {
        let file = body.file;
        // Exactly the schema's attributes and blocks end up in it: sized once, where growing
        // from empty reallocated it three times for a resource of ten attributes.
        let mut object: IndexMap<String, Value> =
            IndexMap::with_capacity(schema.attributes.len() + schema.blocks.len());
        let mut seen: foldhash::HashSet<&str> = foldhash::HashSet::default();
        let mut blocks: IndexMap<String, Vec<Value>> = IndexMap::new();
        // Block types a `dynamic` block makes unknown (its for_each is not known yet).
        let mut unknown_blocks: HashSet<String> = HashSet::new();
        // Required attributes that an unsupported argument was probably meant to set: one
        // typo is reported once, not also as a missing argument.
        let mut misspelt: Vec<String> = Vec::new();
        for structure in body.body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let key = attr.key.as_str();
                    let key_span = self.span(file, attr.key.span());
                    if !schema.attributes.contains_key(key)
                        && let Some(nested) = schema.blocks.get(key).filter(|n| n.also_argument)
                    {
                        if !seen.insert(key) {
                            self.diags.error(
                                key_span,
                                "Duplicate argument",
                                format!("The argument \"{key}\" was already set in {context}."),
                            );
                            continue;
                        }
                        let value = self.eval_in(module, &attr.value, file, repetition.clone());
                        self.blocks_as_attribute(
                            (key, key_span.unwrap_or(body.span)),
                            nested,
                            &value,
                            Some(gpustack_lang::config::span_of(file, attr.value.span())),
                            context,
                            &mut blocks,
                            &mut unknown_blocks,
                        );
                        continue;
                    }
                    let Some(schema_attr) = schema.attributes.get(key) else {
                        let hint = if schema.blocks.contains_key(key) {
                            format!(" \"{key}\" is a block: write {key} {{ ... }}.")
                        } else {
                            suggest(key, schema.attributes.keys().map(String::as_str))
                        };
                        if let Some(meant) =
                            closest(key, schema.attributes.keys().map(String::as_str))
                        {
                            misspelt.push(meant.to_owned());
                        }
                        self.diags.error(
                            key_span,
                            "Unsupported argument",
                            format!(
                                "An argument named \"{key}\" is not expected in {context}.{hint}"
                            ),
                        );
                        continue;
                    };
                    if !seen.insert(key) {
                        self.diags.error(
                            key_span,
                            "Duplicate argument",
                            format!("The argument \"{key}\" was already set in {context}."),
                        );
                        continue;
                    }
                    if !schema_attr.is_configurable() {
                        self.diags.error(
                            key_span,
                            "Invalid argument",
                            format!("\"{key}\" is set by the provider and cannot be configured."),
                        );
                        continue;
                    }
                    let value = self.eval_in(module, &attr.value, file, repetition.clone());
                    match schema_attr.ty.convert(&value) {
                        Ok(converted) => {
                            object.insert(key.to_owned(), converted);
                        }
                        Err(err) => {
                            self.diags.error(
                                gpustack_lang::config::span_of(file, attr.value.span()),
                                "Incorrect attribute value type",
                                format!("Inappropriate value for attribute \"{key}\": {err}."),
                            );
                            object.insert(key.to_owned(), Value::Unknown);
                        }
                    }
                }
                Structure::Block(block) if block.ident.as_str() == "dynamic" => {
                    self.dynamic_block(
                        module,
                        file,
                        block,
                        schema,
                        &repetition,
                        context,
                        &mut blocks,
                        &mut unknown_blocks,
                    );
                }
                Structure::Block(block) => {
                    let kind = block.ident.as_str();
                    if !schema.blocks.contains_key(kind)
                        && let Some(attr) = schema.attributes.get(kind)
                        && attr.ty == Type::Any
                        && attr.is_configurable()
                        && block.labels.is_empty()
                    {
                        // An argument that takes either a value or Terraform's block of it
                        // (kubernetes_manifest's `field_manager "name"` or `field_manager {}`):
                        // the block is the object of its arguments.
                        let key_span = self.span(file, block.ident.span());
                        if !seen.insert(kind) {
                            self.diags.error(
                                key_span,
                                "Duplicate argument",
                                format!("The argument \"{kind}\" was already set in {context}."),
                            );
                            continue;
                        }
                        let mut fields = IndexMap::new();
                        for inner in block.body.iter() {
                            match inner {
                                Structure::Attribute(a) => {
                                    let value =
                                        self.eval_in(module, &a.value, file, repetition.clone());
                                    fields.insert(a.key.as_str().to_owned(), value);
                                }
                                Structure::Block(b) => self.diags.error(
                                    self.span(file, b.ident.span()),
                                    "Unsupported block type",
                                    format!("A {kind} block takes arguments only."),
                                ),
                            }
                        }
                        object.insert(kind.to_owned(), Value::Object(fields));
                        continue;
                    }
                    let Some(nested) = schema.blocks.get(kind) else {
                        let hint = if schema.attributes.contains_key(kind) {
                            format!(" \"{kind}\" is an argument: write {kind} = ....")
                        } else {
                            suggest(kind, schema.blocks.keys().map(String::as_str))
                        };
                        self.diags.error(
                            self.span(file, block.ident.span()),
                            "Unsupported block type",
                            format!(
                                "Blocks of type \"{kind}\" are not expected in {context}.{hint}"
                            ),
                        );
                        continue;
                    };
                    if !block.labels.is_empty() {
                        self.diags.error(
                            self.span(file, block.labels[0].span()),
                            "Extraneous label",
                            format!("A {kind} block takes no labels."),
                        );
                    }
                    let inner = BodyRef {
                        body: block.body.clone(),
                        file,
                        span: self.span(file, block.ident.span()).unwrap_or(body.span),
                    };
                    let value = self.decode(
                        module,
                        &inner,
                        &nested.block,
                        repetition.clone(),
                        &format!("a {kind} block"),
                    );
                    self.push_block(&mut blocks, kind, nested, value, inner.span, context);
                }
            }
        }
        for (name, attr) in &schema.attributes {
            if object.contains_key(name) {
                continue;
            }
            if attr.required && !misspelt.contains(name) {
                self.diags.error(
                    body.span,
                    "Missing required argument",
                    format!("The argument \"{name}\" is required in {context}, but it is not set."),
                );
            }
            let unset = if attr.computed {
                self.unset_computed.clone()
            } else {
                Value::Null
            };
            object.insert(name.clone(), unset);
        }
        for (name, nested) in &schema.blocks {
            let list = blocks.swap_remove(name.as_str()).unwrap_or_default();
            if unknown_blocks.contains(name) {
                object.insert(name.clone(), Value::Unknown);
                continue;
            }
            if list.len() < nested.min_items {
                self.diags.error(
                    body.span,
                    "Missing required block",
                    format!(
                        "At least {} {name} block(s) are required in {context}.",
                        nested.min_items
                    ),
                );
            }
            let value = match nested.nesting {
                BlockNesting::Single => list.into_iter().next().unwrap_or(Value::Null),
                BlockNesting::List => Value::List(list),
            };
            object.insert(name.clone(), value);
        }
        Value::Object(object)
    }

    /// A nested block type written as an argument: `set = [{ name = "a", value = "1" }]` for
    /// `set { ... }` blocks, `kubernetes = { ... }` for a `kubernetes { ... }` block. Providers
    /// moved such arguments from one form to the other between major versions (the helm
    /// provider's v2 and v3), and Terraform reads both; each element is one block.
    #[allow(
        clippy::too_many_arguments,
        reason = "the state of the body being decoded"
    )]
    fn blocks_as_attribute(
        &mut self,
        (kind, key_span): (&str, Span),
        nested: &NestedBlock,
        value: &Value,
        value_span: Option<Span>,
        context: &str,
        blocks: &mut IndexMap<String, Vec<Value>>,
        unknown_blocks: &mut HashSet<String>,
    ) {
        let element = block_type(&nested.block);
        let ty = match nested.nesting {
            BlockNesting::Single => element,
            BlockNesting::List => Type::list(element),
        };
        if value.is_unknown() {
            unknown_blocks.insert(kind.to_owned());
            return;
        }
        if value.is_null() {
            return;
        }
        match ty.convert(value) {
            Ok(Value::List(items)) if nested.nesting == BlockNesting::List => {
                for item in items {
                    self.push_block(blocks, kind, nested, item, key_span, context);
                }
            }
            Ok(converted) => self.push_block(blocks, kind, nested, converted, key_span, context),
            Err(err) => self.diags.error(
                value_span.or(Some(key_span)),
                "Incorrect attribute value type",
                format!("Inappropriate value for attribute \"{kind}\": {err}."),
            ),
        }
    }

    fn push_block(
        &mut self,
        blocks: &mut IndexMap<String, Vec<Value>>,
        kind: &str,
        nested: &NestedBlock,
        value: Value,
        span: Span,
        context: &str,
    ) {
        let list = blocks.entry(kind.to_owned()).or_default();
        list.push(value);
        if nested.max_items.is_some_and(|max| list.len() > max) {
            self.diags.error(
                span,
                "Too many blocks",
                format!(
                    "At most {} {kind} block(s) may appear in {context}.",
                    nested.max_items.unwrap_or(1)
                ),
            );
        }
    }

    // Long by design: a `dynamic` block's for_each, iterator and content decoded in one
    // place, as Terraform defines them together.
    /// `dynamic "KIND" { for_each = ..., iterator = NAME, content { ... } }`: one KIND block
    /// per element of for_each, its content evaluated with NAME (default KIND) bound to
    /// `{ key, value }`, as in Terraform.
    #[allow(
        clippy::too_many_arguments,
        reason = "the state of the body being decoded"
    )]
    fn dynamic_block(
        &mut self,
        module: usize,
        file: gpustack_lang::source::FileId,
        block: &hcl_edit::structure::Block,
        schema: &Schema,
        repetition: &Option<Repetition>,
        context: &str,
        blocks: &mut IndexMap<String, Vec<Value>>,
        unknown_blocks: &mut HashSet<String>,
    ) {
        let at = self.span(file, block.ident.span());
        let Some(kind) = block.labels.first().map(|l| l.as_str().to_owned()) else {
            self.diags.error(
                at,
                "Missing dynamic block type",
                "A dynamic block names the block type it generates: dynamic \"TYPE\" { ... }.",
            );
            return;
        };
        let Some(nested) = schema.blocks.get(&kind) else {
            self.diags.error(
                self.span(file, block.labels[0].span()),
                "Unsupported block type",
                format!(
                    "Blocks of type \"{kind}\" are not expected in {context}.{}",
                    suggest(&kind, schema.blocks.keys().map(String::as_str))
                ),
            );
            return;
        };
        let mut for_each = None;
        let mut iterator = kind.clone();
        let mut content = None;
        for structure in block.body.iter() {
            match structure {
                Structure::Attribute(a) if a.key.as_str() == "for_each" => {
                    for_each = Some(Expr {
                        expr: a.value.clone(),
                        file,
                    });
                }
                Structure::Attribute(a) if a.key.as_str() == "iterator" => {
                    match gpustack_lang::config::load::static_parts(&a.value).as_deref() {
                        Some([name]) => iterator = name.clone(),
                        _ => self.diags.error(
                            self.span(file, a.value.span()),
                            "Invalid dynamic iterator name",
                            "The iterator is a name, such as iterator = pool.",
                        ),
                    }
                }
                Structure::Block(b) if b.ident.as_str() == "content" && content.is_none() => {
                    content = Some(b);
                }
                Structure::Attribute(a) => self.diags.error(
                    self.span(file, a.key.span()),
                    "Unsupported argument",
                    format!(
                        "An argument named \"{}\" is not expected in a dynamic block; it takes for_each, iterator and a content block.",
                        a.key.as_str()
                    ),
                ),
                Structure::Block(b) => self.diags.error(
                    self.span(file, b.ident.span()),
                    if b.ident.as_str() == "content" {
                        "Duplicate content block"
                    } else {
                        "Unsupported block type"
                    },
                    "A dynamic block holds one content block.",
                ),
            }
        }
        let (Some(for_each), Some(content)) = (for_each, content) else {
            self.diags.error(
                at,
                "Incomplete dynamic block",
                format!("The dynamic \"{kind}\" block needs for_each and a content block."),
            );
            return;
        };
        let collection = self.eval(module, &for_each, repetition.clone());
        let items: Vec<(Value, Value)> = match collection.clone().unmark_deep().0 {
            v if !v.is_wholly_known() && !matches!(v, Value::List(_) | Value::Object(_)) => {
                unknown_blocks.insert(kind);
                return;
            }
            Value::List(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::number(i as f64), v))
                .collect(),
            // A map is iterated in the lexical order of its keys, as Terraform does.
            Value::Object(items) => {
                let mut items: Vec<(String, Value)> = items.into_iter().collect();
                items.sort_by(|a, b| a.0.cmp(&b.0));
                items
                    .into_iter()
                    .map(|(k, v)| (Value::String(k), v))
                    .collect()
            }
            other => {
                self.diags.error(
                    for_each.span(),
                    "Invalid dynamic for_each value",
                    format!(
                        "Cannot use a {} value in for_each. An iterable collection is required.",
                        other.type_name()
                    ),
                );
                return;
            }
        };
        let inner = BodyRef {
            body: content.body.clone(),
            file,
            span: self
                .span(file, content.ident.span())
                .or(at)
                .unwrap_or(Span::new(file, 0..0)),
        };
        for (key, value) in items {
            let mut bound = repetition.clone().unwrap_or_default();
            bound.iterators.push((iterator.clone(), key, value));
            let value = self.decode(
                module,
                &inner,
                &nested.block,
                Some(bound),
                &format!("a {kind} block"),
            );
            self.push_block(blocks, &kind, nested, value, inner.span, context);
        }
    }

    /// A type of a Terraform provider gpustack does not serve: reported once per type, at its
    /// first block in the stack, naming the provider.
    fn foreign_type(
        &mut self,
        r: &Resource,
        foreign: gpustack_protocol::terraform::ForeignProvider,
    ) {
        let blocks = self.stack.modules.iter().flat_map(|m| match r.mode {
            ResourceMode::Managed => m.resources.values(),
            ResourceMode::Data => m.data.values(),
        });
        let mut first = None;
        let mut count = 0;
        for other in blocks.filter(|o| o.type_name == r.type_name) {
            first.get_or_insert(other);
            count += 1;
        }
        if !first.is_some_and(|first| std::ptr::eq(first, r)) {
            return;
        }
        let (what, verb) = match r.mode {
            ResourceMode::Managed => ("Resource type", "manage"),
            ResourceMode::Data => ("Data source type", "read"),
        };
        let blocks = if count > 1 {
            format!(" ({count} blocks of this type; this is the first)")
        } else {
            String::new()
        };
        let advice = if foreign.infrastructure {
            " Keep what it manages in the Terraform stack that has it, give that stack outputs for what this one needs (a cluster's endpoint, a role's ARN, a subnet's ID), and read them here with data \"terraform_remote_state\"."
        } else {
            ""
        };
        self.diags.error(
            r.type_span,
            format!("{what} of another provider"),
            format!(
                "{} belongs to Terraform's {} provider, which gpustack does not serve: gpustack does not {verb} it{blocks}.{advice}",
                r.type_name, foreign.source
            ),
        );
    }

    /// The diagnostic of a resource or data source type no provider serves: one of another
    /// Terraform provider's (once per type), one of a served provider's that is not served
    /// yet, or an unknown name with the closest served one. Validate and plan both say it.
    pub(crate) fn type_not_served(&mut self, r: &Resource) {
        if let Some(foreign) = gpustack_protocol::terraform::foreign_provider(&r.type_name) {
            self.foreign_type(r, foreign);
            return;
        }
        if let Some(why) = gpustack_protocol::terraform::unserved_type(
            &r.type_name,
            r.mode == ResourceMode::Data,
        ) && self
            .registry
            .provider(r.type_name.split('_').next().unwrap_or_default())
            .is_some()
            // A misspelt name of a served type gets its suggestion instead; a type the
            // provider documents is no misspelling.
            && (gpustack_protocol::terraform::is_documented_type(
                &r.type_name,
                r.mode == ResourceMode::Data,
            ) || match r.mode {
                ResourceMode::Managed => closest(&r.type_name, self.registry.resource_types()),
                ResourceMode::Data => closest(&r.type_name, self.registry.data_source_types()),
            }
            .is_none())
        {
            self.diags.error(r.type_span, "Type not served", why);
            return;
        }
        let (what, types): (&str, Vec<&str>) = match r.mode {
            ResourceMode::Managed => ("resource", self.registry.resource_types().collect()),
            ResourceMode::Data => ("data source", self.registry.data_source_types().collect()),
        };
        self.diags.error(
            r.type_span,
            format!("Unsupported {what} type"),
            format!(
                "No provider offers a {what} type named \"{}\".{}",
                r.type_name,
                suggest(&r.type_name, types)
            ),
        );
    }

    /// Asks the owning provider to check a configuration, and points its findings at the source.
    pub(crate) fn provider_checks(&mut self, r: &Resource, config: &Value) {
        let Some(owner) = self.registry.owner_of(&r.type_name) else {
            return;
        };
        let Some(provider) = self.registry.provider(owner) else {
            return;
        };
        let response = provider.validate_resource_config(ValidateResourceConfigRequest {
            type_name: &r.type_name,
            config,
        });
        for d in response.diagnostics {
            let span = d
                .attribute
                .as_deref()
                .and_then(|path| attribute_span(&r.body, path))
                .unwrap_or(r.span);
            self.diags.push(Diag {
                severity: d.severity,
                summary: d.summary,
                detail: d.detail,
                span: Some(span),
            });
        }
    }
}

/// The source of an attribute path such as `node_taints[1]` or `accelerator.count`: the list
/// element or nested block attribute where it can be found, else the closest enclosing one.
fn attribute_span(body: &BodyRef, path: &str) -> Option<Span> {
    let mut current = &body.body;
    let mut best = None;
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        let (name, index) = match step.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (step, None),
        };
        if let Some(attr) = current.get_attribute(name) {
            best = attr.value.span().or(attr.span());
            if let (Some(i), Expression::Array(items)) = (index, &attr.value) {
                best = items.get(i).and_then(|e| e.span()).or(best);
            }
            // On into an object constructor, by its literal keys: `config.bucket`.
            let mut value = &attr.value;
            while let (Some(step), Expression::Object(object)) = (steps.next(), value) {
                let Some((key, item)) = object.iter().find(|(key, _)| match key {
                    hcl_edit::expr::ObjectKey::Ident(ident) => ident.as_str() == step,
                    hcl_edit::expr::ObjectKey::Expression(Expression::String(s)) => {
                        s.value() == step
                    }
                    _ => false,
                }) else {
                    break;
                };
                best = key.span().or(best);
                value = item.expr();
            }
            break;
        }
        match current.get_blocks(name).nth(index.unwrap_or(0)) {
            Some(block) if steps.peek().is_some() => {
                best = block.ident.span();
                current = &block.body;
            }
            Some(block) => {
                best = block.ident.span();
                break;
            }
            None => break,
        }
    }
    best.map(|r| Span::new(body.file, r))
}

/// The type of one block of `schema` written as an object: its required arguments required,
/// everything else optional.
fn block_type(schema: &Schema) -> Type {
    let mut attrs: IndexMap<String, gpustack_protocol::ObjectAttr> = schema
        .attributes
        .iter()
        .filter(|(_, a)| a.is_configurable())
        .map(|(name, a)| {
            let attr = if a.required {
                gpustack_protocol::ObjectAttr::required(a.ty.clone())
            } else {
                gpustack_protocol::ObjectAttr::optional(a.ty.clone())
            };
            (name.clone(), attr)
        })
        .collect();
    for (name, nested) in &schema.blocks {
        let ty = match nested.nesting {
            BlockNesting::Single => block_type(&nested.block),
            BlockNesting::List => Type::list(block_type(&nested.block)),
        };
        attrs.insert(name.clone(), gpustack_protocol::ObjectAttr::optional(ty));
    }
    Type::Object(attrs)
}
