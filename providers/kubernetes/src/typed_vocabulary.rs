//! The words a typed kind is described in: a field's type ([`F`]), a kind ([`Kind`]) and what
//! its apply waits for ([`Await`]), and the metadata every embedded object has
//! ([`OBJECT_META`]). The hand-written kinds (`typed.rs`) and the generated field tables
//! (`typed_fields.rs`) are both written in them.

/// A field's type, as the Kubernetes API has it.
#[derive(Debug)]
pub(crate) enum F {
    Str,
    Num,
    Bool,
    /// A map of strings (labels, ConfigMap data, quantities).
    Map,
    /// A map of strings Terraform takes as text and Kubernetes holds base64-encoded (a
    /// Secret's `data`).
    Base64Map,
    /// A string Terraform takes as text and Kubernetes holds base64-encoded (a webhook's
    /// `caBundle`).
    Base64,
    /// A list of strings.
    List,
    /// A list of numbers.
    Nums,
    /// An int-or-string (a port, `maxSurge`): Terraform's string, in the object a number
    /// when it reads as one.
    IntOrStr,
    /// A file mode: Terraform's octal string (`"0644"`), in the object a number.
    Mode,
    /// An object: a block of at most one.
    Obj(&'static [(&'static str, F)]),
    /// A list of objects: a repeated block.
    Objs(&'static [(&'static str, F)]),
    /// A block of at most one that only Terraform has: its fields are the enclosing object's
    /// in Kubernetes (a PersistentVolume's `persistent_volume_source`).
    Inline(&'static [(&'static str, F)]),
}

/// One kind Terraform has typed resources for.
#[derive(Debug)]
pub(crate) struct Kind {
    /// The resource type names: Terraform's unversioned and `_v1` names of one kind.
    pub names: &'static [&'static str],
    pub api_version: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    /// The object's fields besides apiVersion, kind and metadata.
    pub fields: &'static [(&'static str, F)],
    /// Arguments of Terraform's schema gpustack refuses, with the reason (their type: bool).
    pub refused: &'static [(&'static str, &'static str)],
    /// What apply waits for, and the provider's argument that says whether or for what
    /// (`wait_for_rollout`, `target_state`; none where the provider always waits); kinds that
    /// wait also honour `timeouts`.
    pub waits: Option<(Option<&'static str>, Await)>,
}

/// What a kind's apply waits for, through `kubernetes_manifest`'s `wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Await {
    /// The rollout of a Deployment, DaemonSet or StatefulSet; a LoadBalancer Service's
    /// ingress.
    Rollout,
    /// A Job's `Complete` condition.
    Completion,
    /// An Ingress's load balancer, waited for only when asked (`wait_for_load_balancer =
    /// true`): Terraform's provider does not wait by default.
    LoadBalancerWhenAsked,
    /// A ReplicationController's replicas all labelled as its selector asks, always (the
    /// provider has no argument to turn it off).
    Replicas,
    /// A Pod's phase one of its `target_state` (a list; `["Running"]` unless set), waited for
    /// while it is `Pending` and refused at once when it reaches another.
    Phase,
    /// A PersistentVolumeClaim `Bound` (`wait_until_bound`, true unless set false).
    Bound,
    /// A service account token Secret's `token` filled in by the token controller
    /// (`wait_for_service_account_token`, true unless set false; other Secrets do not wait).
    ServiceAccountToken,
    /// A Namespace's `default` ServiceAccount made (`wait_for_default_service_account`, false
    /// unless set true, as in the provider).
    DefaultServiceAccountWhenAsked,
}

impl Await {
    /// Whether the kind's waiting argument is a bool (`wait_for_rollout = false`) rather than
    /// what to wait for (`target_state`).
    pub(crate) fn argument_is_bool(self) -> bool {
        self != Self::Phase
    }
}

/// The metadata of an object a kind embeds (a pod template, a job template, a claim template):
/// Terraform's `metadata {}` block.
pub(crate) const OBJECT_META: &[(&str, F)] = &[
    ("name", F::Str),
    ("generateName", F::Str),
    ("namespace", F::Str),
    ("labels", F::Map),
    ("annotations", F::Map),
];
