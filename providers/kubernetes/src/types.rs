//! The resource types the kubernetes provider serves.

/// The provider's untyped resource types: a whole object, labels or annotations on an object
/// someone else owns, a patch of such an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ObjectType {
    Manifest,
    Labels,
    Annotations,
    Patch,
}

impl ObjectType {
    pub(crate) const ALL: [Self; 4] =
        [Self::Manifest, Self::Labels, Self::Annotations, Self::Patch];

    pub(crate) fn of(type_name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.type_name() == type_name)
    }

    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Self::Manifest => "kubernetes_manifest",
            Self::Labels => "kubernetes_labels",
            Self::Annotations => "kubernetes_annotations",
            Self::Patch => "kubernetes_patch",
        }
    }
}
