use crate::types::{ObjectAttr, Type};
use indexmap::IndexMap;

/// One attribute of a resource, data source or provider configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub ty: Type,
    /// Must be set in configuration.
    pub required: bool,
    /// May be set in configuration.
    pub optional: bool,
    /// Set by the provider: always when neither required nor optional, else when not configured.
    pub computed: bool,
    pub sensitive: bool,
    /// Changing it means destroying and re-creating the object (`replace_because_immutable`).
    pub force_new: bool,
    /// Write-only (Terraform 1.11): sent to the provider when it applies, never in a plan or
    /// the state, and the one kind of resource argument an ephemeral value may reach.
    pub write_only: bool,
    /// A secret the provider draws from the plan's seed (a password, a private key) and draws
    /// again when it reads the object with that seed: the state keeps it as a digest, and the
    /// engine asks for it again where something refers to it.
    pub drawn: bool,
    pub description: String,
}

impl Attribute {
    pub fn required(ty: Type) -> Self {
        Self {
            ty,
            required: true,
            optional: false,
            computed: false,
            sensitive: false,
            force_new: false,
            write_only: false,
            drawn: false,
            description: String::new(),
        }
    }

    pub fn optional(ty: Type) -> Self {
        Self {
            required: false,
            optional: true,
            ..Self::required(ty)
        }
    }

    /// Only the provider sets it; configuration may not.
    pub fn computed(ty: Type) -> Self {
        Self {
            required: false,
            computed: true,
            ..Self::required(ty)
        }
    }

    /// Configuration may set it; otherwise the provider chooses.
    pub fn optional_computed(ty: Type) -> Self {
        Self {
            computed: true,
            ..Self::optional(ty)
        }
    }

    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    /// Write-only: see [`Attribute::write_only`].
    pub fn write_only(mut self) -> Self {
        self.write_only = true;
        self
    }

    /// A secret drawn from the plan's seed: see [`Attribute::drawn`].
    pub fn drawn(mut self) -> Self {
        self.sensitive = true;
        self.drawn = true;
        self
    }

    pub fn force_new(mut self) -> Self {
        self.force_new = true;
        self
    }

    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Whether configuration may set this attribute at all.
    pub fn is_configurable(&self) -> bool {
        self.required || self.optional
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockNesting {
    /// At most one block; its value is an object (or null).
    Single,
    /// Any number of blocks in order; its value is a list of objects.
    List,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NestedBlock {
    pub nesting: BlockNesting,
    pub min_items: usize,
    pub max_items: Option<usize>,
    pub block: Schema,
    /// May also be written as an argument (`set = [{ ... }]` for `set { ... }` blocks): a
    /// provider that moved it from one form to the other between major versions takes both,
    /// as Terraform reads such a provider's blocks.
    pub also_argument: bool,
}

/// Values by a name that a stack or a provider chose, in the order declared: a schema's
/// attributes and blocks, a module's declarations. Hashed with foldhash: the names are not an
/// attacker's, and the evaluation looks one up for every argument of every resource (with SipHash, these lookups and the registry's were 2.4% of the instructions of
/// a 100,000-resource `validate`).
pub type Names<T> = IndexMap<String, T, foldhash::fast::RandomState>;

/// The shape of a resource, data source or provider configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    pub description: String,
    pub attributes: Names<Attribute>,
    pub blocks: Names<NestedBlock>,
}

impl Schema {
    pub fn new(description: impl Into<String>) -> Self {
        Self {
            description: description.into(),
            ..Self::default()
        }
    }

    pub fn attr(mut self, name: &str, attribute: Attribute) -> Self {
        self.attributes.insert(name.to_owned(), attribute);
        self
    }

    pub fn block(mut self, name: &str, nesting: BlockNesting, block: Schema) -> Self {
        let max_items = (nesting == BlockNesting::Single).then_some(1);
        self.blocks.insert(
            name.to_owned(),
            NestedBlock {
                nesting,
                min_items: 0,
                max_items,
                block,
                also_argument: false,
            },
        );
        self
    }

    /// A block type that may also be written as an argument (see [`NestedBlock::also_argument`]).
    pub fn block_or_argument(mut self, name: &str, nesting: BlockNesting, block: Schema) -> Self {
        self = self.block(name, nesting, block);
        if let Some(nested) = self.blocks.get_mut(name) {
            nested.also_argument = true;
        }
        self
    }

    /// Whether the provider draws any of its secrets from the plan's seed.
    pub fn draws_secrets(&self) -> bool {
        self.attributes.values().any(|a| a.drawn)
    }

    /// The object type of a value of this schema, nested blocks included.
    pub fn value_type(&self) -> Type {
        let mut attrs: IndexMap<String, ObjectAttr> = self
            .attributes
            .iter()
            .map(|(name, a)| (name.clone(), ObjectAttr::optional(a.ty.clone())))
            .collect();
        for (name, nested) in &self.blocks {
            let ty = match nested.nesting {
                BlockNesting::Single => nested.block.value_type(),
                BlockNesting::List => Type::list(nested.block.value_type()),
            };
            attrs.insert(name.clone(), ObjectAttr::optional(ty));
        }
        Type::Object(attrs)
    }
}

/// Everything a provider declares: its own configuration and the types it manages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderSchema {
    /// The provider's local name, as in `provider "kubernetes" {}`.
    pub name: String,
    pub config: Schema,
    pub resources: IndexMap<String, Schema>,
    pub data_sources: IndexMap<String, Schema>,
}

impl ProviderSchema {
    /// One type's schema, taken out of the whole.
    pub fn into_type(mut self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        match mode {
            ResourceMode::Managed => self.resources.swap_remove(type_name),
            ResourceMode::Data => self.data_sources.swap_remove(type_name),
        }
    }
}

/// What a provider declares, less its schemas (its configuration's and its types'): what a
/// run needs before it knows which providers and types its stack uses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderTypes {
    pub name: String,
    pub resources: Vec<String>,
    pub data_sources: Vec<String>,
}

impl ProviderTypes {
    pub fn of(schema: &ProviderSchema) -> Self {
        Self {
            name: schema.name.clone(),
            resources: schema.resources.keys().cloned().collect(),
            data_sources: schema.data_sources.keys().cloned().collect(),
        }
    }
}

/// Whether a block is a managed resource or a data source, in the configuration and in the
/// state alike.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ResourceMode {
    Managed,
    Data,
}
