//! The kubernetes provider's typed resources as Terraform's hashicorp/kubernetes provider has
//! them (`kubernetes_config_map_v1`, `kubernetes_namespace`, ...): each an object of one kind,
//! applied as a `kubernetes_manifest` of it is, through the same server-side apply, identity
//! (uid) and ownership rules — a typed resource is translated into a manifest resource and
//! back, never applied by code of its own.
//!
//! Schemas are derived, not written per type: the kinds below list their fields as the
//! Kubernetes API names them (camelCase), and Terraform's schema follows by the provider's
//! rule — snake_case names, every nested object a block of at most one (`metadata {}`,
//! `spec {}`), a list of objects a repeated block — with the provider's exceptions to that
//! rule in one table ([`RENAMES`]). The workload kinds' fields, the whole pod template with
//! them, are too many to list by hand: `typed_fields.rs` is generated from the Kubernetes
//! OpenAPI document by `typed_fields.py` and checked against a live API server.

use crate::typed_fields as fields;
use crate::typed_vocabulary::{Await, F, Kind};
use base64::Engine as _;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    GpuFact, NestedBlock, Path, PathStep, PlanDeleteRequest, PlanDeleteResponse,
    PlanResourceChangeRequest, PlanResourceChangeResponse, ReadResourcesRequest,
    ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, set};
use gpustack_provider_sdk::objects::strip_nulls;
use gpustack_provider_sdk::resource::Resource;
use serde_json::Value as Json;

/// Where Terraform's kubernetes provider departs from its rule: (where, Kubernetes field,
/// Terraform name). Where is the end of the path of the object holding the field, the kind
/// first (`DaemonSet.spec`, `rbd` for any field named so), or `"*"` for anywhere. Most lists of objects are named in the singular
/// (`container`, `volume`, `port`), some keep the plural (`items`, `host_aliases`,
/// `image_pull_secrets` of a pod); a few fields are named otherwise.
pub(crate) const RENAMES: &[(&str, &str, &str)] = &[
    ("*", "rules", "rule"),
    ("*", "subjects", "subject"),
    ("*", "secrets", "secret"),
    ("ServiceAccount", "imagePullSecrets", "image_pull_secret"),
    ("DaemonSet.spec", "updateStrategy", "strategy"),
    ("*", "provisioner", "storage_provisioner"),
    ("*", "limits", "limit"),
    ("*", "containers", "container"),
    ("*", "initContainers", "init_container"),
    ("*", "volumes", "volume"),
    ("*", "volumeMounts", "volume_mount"),
    ("*", "volumeDevices", "volume_device"),
    ("*", "volumeClaimTemplates", "volume_claim_template"),
    ("*", "ports", "port"),
    ("*", "tolerations", "toleration"),
    ("*", "readinessGates", "readiness_gate"),
    (
        "*",
        "topologySpreadConstraints",
        "topology_spread_constraint",
    ),
    ("*", "nodeSelectorTerms", "node_selector_term"),
    ("scopeSelector", "matchExpressions", "match_expression"),
    ("*", "httpHeaders", "http_header"),
    ("dnsConfig", "options", "option"),
    ("*", "sysctls", "sysctl"),
    ("*", "onPodConditions", "on_pod_condition"),
    ("*", "timeZone", "timezone"),
    ("*", "runAsUserName", "run_as_username"),
    ("*", "targetWWNs", "target_ww_ns"),
    ("*", "cephfs", "ceph_fs"),
    ("rbd", "monitors", "ceph_monitors"),
    ("rbd", "image", "rbd_image"),
    ("rbd", "pool", "rbd_pool"),
    ("rbd", "user", "rados_user"),
    ("glusterfs", "endpoints", "endpoints_name"),
    ("azureDisk", "diskURI", "data_disk_uri"),
    // A NetworkPolicy rule's ports keep their plural in Terraform's schema.
    ("ingress", "ports", "ports"),
    ("egress", "ports", "ports"),
    ("HorizontalPodAutoscaler.spec", "metrics", "metric"),
    ("http", "paths", "path"),
    ("scaleUp", "policies", "policy"),
    ("scaleDown", "policies", "policy"),
    ("*", "webhooks", "webhook"),
    ("Endpoints", "subsets", "subset"),
    ("subsets", "addresses", "address"),
    ("subsets", "notReadyAddresses", "not_ready_address"),
    ("EndpointSlice", "endpoints", "endpoint"),
    ("EndpointSlice.endpoints", "conditions", "condition"),
];

const SELECTOR_EXPRESSIONS: &[(&str, F)] =
    &[("key", F::Str), ("operator", F::Str), ("values", F::List)];
const RULES: &[(&str, F)] = &[
    ("apiGroups", F::List),
    ("resources", F::List),
    ("resourceNames", F::List),
    ("verbs", F::List),
    ("nonResourceURLs", F::List),
];
const SUBJECTS: &[(&str, F)] = &[
    ("kind", F::Str),
    ("name", F::Str),
    ("namespace", F::Str),
    ("apiGroup", F::Str),
];
const ROLE_REF: &[(&str, F)] = &[("apiGroup", F::Str), ("kind", F::Str), ("name", F::Str)];
const NAME_REF: &[(&str, F)] = &[("name", F::Str)];

/// A PersistentVolume's spec as Terraform's provider writes it: the volume's source in a
/// block of its own, `persistent_volume_source`, which Kubernetes holds in the spec itself.
const PERSISTENT_VOLUME_SPEC: &[(&str, F)] = &[
    ("accessModes", F::List),
    ("capacity", F::Map),
    ("claimRef", F::Obj(fields::CORE_V1_OBJECT_REFERENCE)),
    ("mountOptions", F::List),
    ("nodeAffinity", F::Obj(fields::CORE_V1_VOLUME_NODE_AFFINITY)),
    ("persistentVolumeReclaimPolicy", F::Str),
    ("storageClassName", F::Str),
    ("volumeAttributesClassName", F::Str),
    ("volumeMode", F::Str),
    (
        "persistentVolumeSource",
        F::Inline(&[
            (
                "awsElasticBlockStore",
                F::Obj(fields::CORE_V1_AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE),
            ),
            (
                "azureDisk",
                F::Obj(fields::CORE_V1_AZURE_DISK_VOLUME_SOURCE),
            ),
            (
                "azureFile",
                F::Obj(fields::CORE_V1_AZURE_FILE_PERSISTENT_VOLUME_SOURCE),
            ),
            (
                "cephfs",
                F::Obj(fields::CORE_V1_CEPH_FS_PERSISTENT_VOLUME_SOURCE),
            ),
            (
                "cinder",
                F::Obj(fields::CORE_V1_CINDER_PERSISTENT_VOLUME_SOURCE),
            ),
            ("csi", F::Obj(fields::CORE_V1_CSI_PERSISTENT_VOLUME_SOURCE)),
            ("fc", F::Obj(fields::CORE_V1_FC_VOLUME_SOURCE)),
            (
                "flexVolume",
                F::Obj(fields::CORE_V1_FLEX_PERSISTENT_VOLUME_SOURCE),
            ),
            ("flocker", F::Obj(fields::CORE_V1_FLOCKER_VOLUME_SOURCE)),
            (
                "gcePersistentDisk",
                F::Obj(fields::CORE_V1_GCE_PERSISTENT_DISK_VOLUME_SOURCE),
            ),
            (
                "glusterfs",
                F::Obj(fields::CORE_V1_GLUSTERFS_PERSISTENT_VOLUME_SOURCE),
            ),
            ("hostPath", F::Obj(fields::CORE_V1_HOST_PATH_VOLUME_SOURCE)),
            (
                "iscsi",
                F::Obj(fields::CORE_V1_ISCSI_PERSISTENT_VOLUME_SOURCE),
            ),
            ("local", F::Obj(fields::CORE_V1_LOCAL_VOLUME_SOURCE)),
            ("nfs", F::Obj(fields::CORE_V1_NFS_VOLUME_SOURCE)),
            (
                "photonPersistentDisk",
                F::Obj(fields::CORE_V1_PHOTON_PERSISTENT_DISK_VOLUME_SOURCE),
            ),
            (
                "portworxVolume",
                F::Obj(fields::CORE_V1_PORTWORX_VOLUME_SOURCE),
            ),
            ("quobyte", F::Obj(fields::CORE_V1_QUOBYTE_VOLUME_SOURCE)),
            ("rbd", F::Obj(fields::CORE_V1_RBD_PERSISTENT_VOLUME_SOURCE)),
            (
                "scaleIO",
                F::Obj(fields::CORE_V1_SCALE_IO_PERSISTENT_VOLUME_SOURCE),
            ),
            (
                "storageos",
                F::Obj(fields::CORE_V1_STORAGE_OS_PERSISTENT_VOLUME_SOURCE),
            ),
            (
                "vsphereVolume",
                F::Obj(fields::CORE_V1_VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE),
            ),
        ]),
    ),
];

/// The kinds served, in the order of Terraform's documentation.
pub(crate) const KINDS: &[Kind] = &[
    Kind {
        names: &["kubernetes_namespace", "kubernetes_namespace_v1"],
        api_version: "v1",
        kind: "Namespace",
        namespaced: false,
        fields: &[],
        refused: &[],
        waits: Some((
            Some("wait_for_default_service_account"),
            Await::DefaultServiceAccountWhenAsked,
        )),
    },
    Kind {
        names: &["kubernetes_config_map", "kubernetes_config_map_v1"],
        api_version: "v1",
        kind: "ConfigMap",
        namespaced: true,
        fields: &[
            ("data", F::Map),
            ("binaryData", F::Map),
            ("immutable", F::Bool),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_secret", "kubernetes_secret_v1"],
        api_version: "v1",
        kind: "Secret",
        namespaced: true,
        fields: &[
            ("data", F::Base64Map),
            ("binaryData", F::Map),
            ("type", F::Str),
            ("immutable", F::Bool),
        ],
        refused: &[],
        waits: Some((
            Some("wait_for_service_account_token"),
            Await::ServiceAccountToken,
        )),
    },
    Kind {
        names: &[
            "kubernetes_service_account",
            "kubernetes_service_account_v1",
        ],
        api_version: "v1",
        kind: "ServiceAccount",
        namespaced: true,
        fields: &[
            ("secrets", F::Objs(NAME_REF)),
            ("imagePullSecrets", F::Objs(NAME_REF)),
            ("automountServiceAccountToken", F::Bool),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_storage_class", "kubernetes_storage_class_v1"],
        api_version: "storage.k8s.io/v1",
        kind: "StorageClass",
        namespaced: false,
        fields: &[
            ("provisioner", F::Str),
            ("parameters", F::Map),
            ("reclaimPolicy", F::Str),
            ("volumeBindingMode", F::Str),
            ("allowVolumeExpansion", F::Bool),
            ("mountOptions", F::List),
            (
                "allowedTopologies",
                F::Objs(&[(
                    "matchLabelExpressions",
                    F::Objs(&[("key", F::Str), ("values", F::List)]),
                )]),
            ),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_priority_class", "kubernetes_priority_class_v1"],
        api_version: "scheduling.k8s.io/v1",
        kind: "PriorityClass",
        namespaced: false,
        fields: &[
            ("value", F::Num),
            ("globalDefault", F::Bool),
            ("description", F::Str),
            ("preemptionPolicy", F::Str),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_resource_quota", "kubernetes_resource_quota_v1"],
        api_version: "v1",
        kind: "ResourceQuota",
        namespaced: true,
        fields: &[(
            "spec",
            F::Obj(&[
                ("hard", F::Map),
                ("scopes", F::List),
                (
                    "scopeSelector",
                    F::Obj(&[(
                        "matchExpressions",
                        F::Objs(&[
                            ("scopeName", F::Str),
                            ("operator", F::Str),
                            ("values", F::List),
                        ]),
                    )]),
                ),
            ]),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_limit_range", "kubernetes_limit_range_v1"],
        api_version: "v1",
        kind: "LimitRange",
        namespaced: true,
        fields: &[(
            "spec",
            F::Obj(&[(
                "limits",
                F::Objs(&[
                    ("type", F::Str),
                    ("max", F::Map),
                    ("min", F::Map),
                    ("default", F::Map),
                    ("defaultRequest", F::Map),
                    ("maxLimitRequestRatio", F::Map),
                ]),
            )]),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_cluster_role", "kubernetes_cluster_role_v1"],
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        namespaced: false,
        fields: &[
            ("rules", F::Objs(RULES)),
            (
                "aggregationRule",
                F::Obj(&[(
                    "clusterRoleSelectors",
                    F::Objs(&[
                        ("matchLabels", F::Map),
                        ("matchExpressions", F::Objs(SELECTOR_EXPRESSIONS)),
                    ]),
                )]),
            ),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_role", "kubernetes_role_v1"],
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        namespaced: true,
        fields: &[("rules", F::Objs(RULES))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &[
            "kubernetes_cluster_role_binding",
            "kubernetes_cluster_role_binding_v1",
        ],
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        namespaced: false,
        fields: &[
            ("roleRef", F::Obj(ROLE_REF)),
            ("subjects", F::Objs(SUBJECTS)),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_role_binding", "kubernetes_role_binding_v1"],
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        namespaced: true,
        fields: &[
            ("roleRef", F::Obj(ROLE_REF)),
            ("subjects", F::Objs(SUBJECTS)),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &[
            "kubernetes_persistent_volume_claim",
            "kubernetes_persistent_volume_claim_v1",
        ],
        api_version: "v1",
        kind: "PersistentVolumeClaim",
        namespaced: true,
        fields: &[(
            "spec",
            F::Obj(&[
                ("accessModes", F::List),
                (
                    "resources",
                    F::Obj(&[("requests", F::Map), ("limits", F::Map)]),
                ),
                ("storageClassName", F::Str),
                ("volumeName", F::Str),
                ("volumeMode", F::Str),
                (
                    "selector",
                    F::Obj(&[
                        ("matchLabels", F::Map),
                        ("matchExpressions", F::Objs(SELECTOR_EXPRESSIONS)),
                    ]),
                ),
            ]),
        )],
        refused: &[],
        waits: Some((Some("wait_until_bound"), Await::Bound)),
    },
    Kind {
        names: &[
            "kubernetes_persistent_volume",
            "kubernetes_persistent_volume_v1",
        ],
        api_version: "v1",
        kind: "PersistentVolume",
        namespaced: false,
        fields: &[("spec", F::Obj(PERSISTENT_VOLUME_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_deployment", "kubernetes_deployment_v1"],
        api_version: "apps/v1",
        kind: "Deployment",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::APPS_V1_DEPLOYMENT_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_rollout"), Await::Rollout)),
    },
    Kind {
        names: &["kubernetes_daemonset", "kubernetes_daemon_set_v1"],
        api_version: "apps/v1",
        kind: "DaemonSet",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::APPS_V1_DAEMON_SET_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_rollout"), Await::Rollout)),
    },
    Kind {
        names: &["kubernetes_stateful_set", "kubernetes_stateful_set_v1"],
        api_version: "apps/v1",
        kind: "StatefulSet",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::APPS_V1_STATEFUL_SET_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_rollout"), Await::Rollout)),
    },
    Kind {
        names: &["kubernetes_job", "kubernetes_job_v1"],
        api_version: "batch/v1",
        kind: "Job",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::BATCH_V1_JOB_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_completion"), Await::Completion)),
    },
    Kind {
        names: &["kubernetes_cron_job", "kubernetes_cron_job_v1"],
        api_version: "batch/v1",
        kind: "CronJob",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::BATCH_V1_CRON_JOB_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_service", "kubernetes_service_v1"],
        api_version: "v1",
        kind: "Service",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::CORE_V1_SERVICE_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_load_balancer"), Await::Rollout)),
    },
    Kind {
        names: &[
            "kubernetes_pod_disruption_budget",
            "kubernetes_pod_disruption_budget_v1",
        ],
        api_version: "policy/v1",
        kind: "PodDisruptionBudget",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::POLICY_V1_POD_DISRUPTION_BUDGET_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_ingress_v1"],
        api_version: "networking.k8s.io/v1",
        kind: "Ingress",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::NETWORKING_V1_INGRESS_SPEC))],
        refused: &[],
        waits: Some((Some("wait_for_load_balancer"), Await::LoadBalancerWhenAsked)),
    },
    Kind {
        names: &["kubernetes_network_policy", "kubernetes_network_policy_v1"],
        api_version: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::NETWORKING_V1_NETWORK_POLICY_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_ingress_class", "kubernetes_ingress_class_v1"],
        api_version: "networking.k8s.io/v1",
        kind: "IngressClass",
        namespaced: false,
        fields: &[("spec", F::Obj(fields::NETWORKING_V1_INGRESS_CLASS_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_horizontal_pod_autoscaler_v2"],
        api_version: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        namespaced: true,
        fields: &[(
            "spec",
            F::Obj(fields::AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_SPEC),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_horizontal_pod_autoscaler_v1"],
        api_version: "autoscaling/v1",
        kind: "HorizontalPodAutoscaler",
        namespaced: true,
        fields: &[(
            "spec",
            F::Obj(fields::AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER_SPEC),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_csi_driver_v1"],
        api_version: "storage.k8s.io/v1",
        kind: "CSIDriver",
        namespaced: false,
        fields: &[("spec", F::Obj(fields::STORAGE_V1_CSI_DRIVER_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_validating_webhook_configuration_v1"],
        api_version: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        namespaced: false,
        fields: &[(
            "webhooks",
            F::Objs(fields::ADMISSIONREGISTRATION_V1_VALIDATING_WEBHOOK),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &[
            "kubernetes_mutating_webhook_configuration",
            "kubernetes_mutating_webhook_configuration_v1",
        ],
        api_version: "admissionregistration.k8s.io/v1",
        kind: "MutatingWebhookConfiguration",
        namespaced: false,
        fields: &[(
            "webhooks",
            F::Objs(fields::ADMISSIONREGISTRATION_V1_MUTATING_WEBHOOK),
        )],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_pod", "kubernetes_pod_v1"],
        api_version: "v1",
        kind: "Pod",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::CORE_V1_POD_SPEC))],
        refused: &[],
        waits: Some((Some("target_state"), Await::Phase)),
    },
    Kind {
        names: &[
            "kubernetes_replication_controller",
            "kubernetes_replication_controller_v1",
        ],
        api_version: "v1",
        kind: "ReplicationController",
        namespaced: true,
        fields: &[("spec", F::Obj(fields::CORE_V1_REPLICATION_CONTROLLER_SPEC))],
        refused: &[],
        waits: Some((None, Await::Replicas)),
    },
    Kind {
        names: &["kubernetes_endpoints", "kubernetes_endpoints_v1"],
        api_version: "v1",
        kind: "Endpoints",
        namespaced: true,
        fields: &[("subsets", F::Objs(fields::CORE_V1_ENDPOINT_SUBSET))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_endpoint_slice_v1"],
        api_version: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        namespaced: true,
        fields: &[
            ("addressType", F::Str),
            ("endpoints", F::Objs(fields::DISCOVERY_V1_ENDPOINT)),
            ("ports", F::Objs(fields::DISCOVERY_V1_ENDPOINT_PORT)),
        ],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_api_service", "kubernetes_api_service_v1"],
        api_version: "apiregistration.k8s.io/v1",
        kind: "APIService",
        namespaced: false,
        fields: &[("spec", F::Obj(fields::APIREGISTRATION_V1_API_SERVICE_SPEC))],
        refused: &[],
        waits: None,
    },
    Kind {
        names: &["kubernetes_runtime_class_v1"],
        api_version: "node.k8s.io/v1",
        kind: "RuntimeClass",
        namespaced: false,
        fields: &[("handler", F::Str)],
        refused: &[],
        waits: None,
    },
];

/// The kind a typed resource type stands for.
pub(crate) fn kind_of(type_name: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.names.contains(&type_name))
}

/// Terraform's name of a top-level field of a kind: the exceptions, else snake_case.
pub(crate) fn terraform_name(kind: &Kind, field: &str) -> String {
    field_name(kind.kind, field, true)
}

/// Terraform's name of a field of type `ty` of the object at `holder` (the kind, then
/// Kubernetes field names: `Deployment.spec.template`): a plural made singular only for a list
/// of objects (LimitRange's `limits` is `limit`, a container's `resources.limits` map stays
/// `limits`).
pub(crate) fn name_of(holder: &str, field: &str, ty: &F) -> String {
    field_name(holder, field, matches!(ty, F::Objs(_)))
}

/// The path of the object a field holds.
pub(crate) fn below(holder: &str, field: &str) -> String {
    format!("{holder}.{field}")
}

fn field_name(holder: &str, field: &str, objects: bool) -> String {
    let at = |scope: &str| {
        holder == scope
            || holder
                .strip_suffix(scope)
                .is_some_and(|rest| rest.ends_with('.'))
    };
    // A rename in one place is that field's name there; one for anywhere makes a plural
    // singular only for a list of objects (a container's `limits` map stays `limits`).
    if let Some((_, _, name)) = RENAMES
        .iter()
        .find(|(h, f, _)| *f == field && *h != "*" && at(h))
    {
        return (*name).to_owned();
    }
    if let Some((_, _, name)) = RENAMES.iter().find(|(h, f, _)| *f == field && *h == "*")
        && (objects || format!("{name}s") != field)
    {
        return (*name).to_owned();
    }
    snake_case(field)
}

/// Terraform's snake_case of a Kubernetes name: a run of capitals is one word, and a plural
/// `s` after one belongs to it (`clusterIPs` is `cluster_ips`, `hostIPC` is `host_ipc`).
fn snake_case(field: &str) -> String {
    let chars: Vec<char> = field.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let plural = next == Some('s')
                && chars
                    .get(i + 2)
                    .is_none_or(|after| after.is_ascii_uppercase());
            let starts_word = match prev {
                None => false,
                Some(p) if p.is_ascii_uppercase() => {
                    next.is_some_and(|n| n.is_ascii_lowercase()) && !plural
                }
                Some(_) => true,
            };
            if starts_word {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A block of at most one, as Terraform's kubernetes provider makes every nested object
/// (`metadata[0].name`).
pub(crate) fn one_block(schema: &mut Schema, name: &str, block: Schema, required: bool) {
    schema.blocks.insert(
        name.to_owned(),
        NestedBlock {
            nesting: BlockNesting::List,
            min_items: usize::from(required),
            max_items: Some(1),
            block,
            also_argument: false,
        },
    );
}

pub(crate) fn fields_schema(mut schema: Schema, holder: &str, fields: &[(&str, F)]) -> Schema {
    for (field, ty) in fields {
        let name = name_of(holder, field, ty);
        let attr = |ty: Type| Attribute::optional(ty);
        match ty {
            F::Str => schema = schema.attr(&name, attr(Type::String)),
            F::Num => schema = schema.attr(&name, attr(Type::Number)),
            F::Bool => schema = schema.attr(&name, attr(Type::Bool)),
            F::Map => schema = schema.attr(&name, attr(Type::map(Type::String))),
            F::IntOrStr | F::Mode | F::Base64 => schema = schema.attr(&name, attr(Type::String)),
            F::Nums => schema = schema.attr(&name, attr(Type::list(Type::Number))),
            // Sensitive value by value (see `conceal`), so that the state holds a digest per key
            // and a refresh can name the keys it reads back.
            F::Base64Map => schema = schema.attr(&name, attr(Type::map(Type::String))),
            F::List => schema = schema.attr(&name, attr(Type::list(Type::String))),
            F::Obj(inner) | F::Inline(inner) => {
                let block = fields_schema(Schema::new(""), &below(holder, field), inner);
                one_block(&mut schema, &name, block, false);
            }
            F::Objs(inner) => {
                schema = schema.block(
                    &name,
                    BlockNesting::List,
                    fields_schema(Schema::new(""), &below(holder, field), inner),
                )
            }
        }
    }
    schema
}

/// The `metadata {}` block of every typed resource.
fn metadata_block(namespaced: bool) -> Schema {
    let mut block = Schema::new("The object's metadata.")
        .attr("name", Attribute::optional(Type::String).force_new())
        .attr(
            "generate_name",
            Attribute::optional(Type::String).describe("Refused: gpustack needs the name."),
        )
        .attr("labels", Attribute::optional(Type::map(Type::String)))
        .attr("annotations", Attribute::optional(Type::map(Type::String)))
        .attr("uid", Attribute::computed(Type::String))
        .attr("resource_version", Attribute::computed(Type::String))
        .attr("generation", Attribute::computed(Type::Number));
    if namespaced {
        block = block.attr("namespace", Attribute::optional(Type::String).force_new());
    }
    block
}

/// A typed resource's schema, by the rule.
pub(crate) fn schema(kind: &Kind) -> Schema {
    let mut schema = Schema::new(format!(
        "A {} ({}), applied server-side as kubernetes_manifest applies it.",
        kind.kind, kind.api_version
    ));
    one_block(
        &mut schema,
        "metadata",
        metadata_block(kind.namespaced),
        true,
    );
    let mut schema = fields_schema(schema, kind.kind, kind.fields);
    for (name, _) in kind.refused {
        schema = schema.attr(name, Attribute::optional(Type::Bool));
    }
    if kind.kind == "Secret" {
        for (values, revision, what) in WRITE_ONLY_DATA {
            schema = schema
                .attr(
                    values,
                    Attribute::optional(Type::map(Type::String))
                        .sensitive()
                        .write_only()
                        .describe(format!(
                            "Write-only {what}: never in a plan or the state; applied when the secret is made with {revision} set, and again each time {revision} changes."
                        )),
                )
                .attr(revision, Attribute::optional(Type::Number));
        }
    }
    if let Some((Some(name), what)) = kind.waits {
        schema = schema.attr(
            name,
            if what.argument_is_bool() {
                Attribute::optional(Type::Bool)
                    .describe("Wait after apply, as Terraform does unless set false.")
            } else {
                Attribute::optional(Type::list(Type::String)).describe(
                    "The phases apply waits for while the pod is Pending; [\"Running\"] unless set.",
                )
            },
        );
    }
    schema.block(
        "timeouts",
        BlockNesting::Single,
        Schema::new("Terraform's operation timeouts.")
            .attr("create", Attribute::optional(Type::String))
            .attr("update", Attribute::optional(Type::String))
            .attr("delete", Attribute::optional(Type::String)),
    )
}

/// A Secret's write-only data (Terraform 1.11's write-only arguments, as the provider has
/// them): the values, the revision that says when to apply them, and what they are.
const WRITE_ONLY_DATA: [(&str, &str, &str); 2] = [
    ("data_wo", "data_wo_revision", "data, as text"),
    (
        "binary_data_wo",
        "binary_data_wo_revision",
        "binary data, base64-encoded",
    ),
];

/// The field manager of a Secret's write-only data: its own, so that an apply of the
/// Secret's other fields never drops the keys only a revision sets.
const WRITE_ONLY_MANAGER: &str = "gpustack-write-only";

pub(crate) fn check(kind: &Kind, check: &mut Checker<'_>) {
    if kind.kind == "Secret" {
        for ((values, revision, _), stored) in WRITE_ONLY_DATA.iter().zip(["data", "binary_data"]) {
            if check.get(values).is_some() && check.get(stored).is_some() {
                check.error(
                    values,
                    "Conflicting configuration arguments",
                    format!("{values} and {stored} set the same keys: set one of them."),
                );
            }
            if check.get(revision).is_some() && check.get(values).is_none() {
                check.error(
                    revision,
                    "Missing required argument",
                    format!("{revision} says when {values} is applied: set {values} with it."),
                );
            }
            if check
                .get(revision)
                .and_then(Value::as_number)
                .is_some_and(|r| r < 1.0)
            {
                check.error(
                    revision,
                    "Invalid value",
                    format!("{revision} must be at least 1."),
                );
            }
        }
    }
    if check.get("metadata[0].generate_name").is_some() {
        check.error(
            "metadata[0].generate_name",
            "Unsupported argument",
            "gpustack does not honour generate_name: it finds, adopts and refuses objects by their name, so it needs the name; set metadata.name.".into(),
        );
    } else if metadata_without_name(check) {
        check.error(
            "metadata",
            "Missing required argument",
            "The argument \"name\" is required in the metadata block (gpustack does not generate names).".into(),
        );
    }
    for (name, reason) in kind.refused {
        if check.get(name).and_then(Value::as_bool) == Some(true) {
            check.error(
                name,
                "Unsupported argument value",
                format!("gpustack does not honour {name} = true: {reason}."),
            );
        }
    }
    // A deletion waits until the object is gone (a namespace until it is emptied), so
    // `delete` is honoured on every kind; a create or update of a kind that is not waited for
    // has nothing to time.
    if kind.waits.is_none()
        && let Some(timeouts) = check.get("timeouts").cloned()
    {
        for operation in ["create", "update"] {
            if attribute(&timeouts, operation).is_some() {
                check.error(
                    "timeouts",
                    "Unsupported argument",
                    format!("gpustack does not honour timeouts {{ {operation} }} on {}: its {operation} does not wait; timeouts {{ delete }} is honoured (a deletion waits until the object is gone), and a kubernetes_manifest with a wait block waits for an object.", kind.names[kind.names.len() - 1]),
                );
            }
        }
    }
}

/// The metadata the API server sets.
/// Labels and annotations the API server or kubectl put on objects, left out of an import.
const SET_BY_THE_CLUSTER: &[&str] = &[
    "kubernetes.io/metadata.name",
    "kubectl.kubernetes.io/last-applied-configuration",
];

const COMPUTED_METADATA: [&str; 3] = ["uid", "resource_version", "generation"];

/// The first block of a list block (`metadata[0]`), or the object of a single one.
pub(crate) fn first(value: Option<&Value>) -> Option<&Value> {
    match value? {
        v if v.as_list().is_some() => v.as_list()?.first(),
        v if v.as_object().is_some() => Some(v),
        _ => None,
    }
}

/// Values Terraform's provider sends for a field left unset where Kubernetes has another
/// default, or none (holder, field, value): a PersistentVolume's `claim_ref` is in `default`
/// unless it names a namespace; an Ingress path's `path_type`, which the API requires, is
/// `ImplementationSpecific`.
const TERRAFORM_DEFAULTS: &[(&str, &str, &str)] = &[
    ("PersistentVolume.spec.claimRef", "namespace", "default"),
    (
        "Ingress.spec.rules.http.paths",
        "pathType",
        "ImplementationSpecific",
    ),
];

/// The configuration as Terraform's provider plans it: each of [`TERRAFORM_DEFAULTS`] filled
/// in where its block is configured and the field is not, so that the plan shows what apply
/// sends and the state records.
fn fill_terraform_defaults(kind: &Kind, typed: &mut Value) {
    fn fill(
        holder: &str,
        fields: &[(&str, F)],
        typed: &mut Value,
        path: &[&str],
        field: &str,
        value: &str,
    ) {
        let Some((segment, rest)) = path.split_first() else {
            let name = name_of(holder, field, &F::Str);
            if attribute(typed, &name).is_none_or(Value::is_null) {
                set(typed, &name, Value::string(value));
            }
            return;
        };
        let Some((f, ty)) = fields.iter().find(|(f, _)| f == segment) else {
            return;
        };
        let (F::Obj(inner) | F::Inline(inner) | F::Objs(inner)) = ty else {
            return;
        };
        let name = name_of(holder, f, ty);
        if let Some(Value::List(mut blocks)) = attribute(typed, &name).cloned() {
            for block in &mut blocks {
                fill(&below(holder, f), inner, block, rest, field, value);
            }
            set(typed, &name, Value::List(blocks));
        }
    }
    for (holder, field, value) in TERRAFORM_DEFAULTS {
        let mut path: Vec<&str> = holder.split('.').collect();
        if path.first() != Some(&kind.kind) {
            continue;
        }
        path.remove(0);
        fill(kind.kind, kind.fields, typed, &path, field, value);
    }
}

pub(crate) fn to_json(holder: &str, fields: &[(&str, F)], typed: &Value) -> Json {
    let mut out = serde_json::Map::new();
    for (_, field, value) in TERRAFORM_DEFAULTS.iter().filter(|(h, _, _)| *h == holder) {
        out.insert((*field).to_owned(), Json::String((*value).to_owned()));
    }
    for (field, ty) in fields {
        let name = name_of(holder, field, ty);
        let value = attribute(typed, &name);
        if let F::Inline(inner) = ty {
            if let Some(Json::Object(own)) =
                first(value).map(|v| to_json(&below(holder, field), inner, v))
            {
                out.extend(own);
            }
            continue;
        }
        let json = match ty {
            F::Obj(inner) => first(value).map(|v| to_json(&below(holder, field), inner, v)),
            F::Objs(inner) => value
                .and_then(Value::as_list)
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let at = below(holder, field);
                    Json::Array(l.iter().map(|v| to_json(&at, inner, v)).collect())
                }),
            F::IntOrStr => value.and_then(Value::as_str).map(|text| {
                text.parse::<i64>()
                    .map_or_else(|_| Json::String(text.to_owned()), Json::from)
            }),
            // Terraform's provider reads a mode as octal; one that does not parse reaches the
            // API server as written, which refuses it by its field.
            F::Mode => value.and_then(Value::as_str).map(|text| {
                i64::from_str_radix(text, 8)
                    .map_or_else(|_| Json::String(text.to_owned()), Json::from)
            }),
            F::Base64 => value
                .and_then(Value::as_str)
                .map(|text| Json::String(base64::engine::general_purpose::STANDARD.encode(text))),
            F::Base64Map => value.and_then(Value::as_object).map(|m| {
                Json::Object(
                    m.iter()
                        .map(|(k, v)| {
                            let text = v.as_str().unwrap_or_default();
                            (
                                k.clone(),
                                Json::String(
                                    base64::engine::general_purpose::STANDARD.encode(text),
                                ),
                            )
                        })
                        .collect(),
                )
            }),
            _ => value.map(Value::to_json_revealed),
        };
        if let Some(json) = json.filter(|j| !j.is_null()) {
            out.insert((*field).to_owned(), json);
        }
    }
    Json::Object(out)
}

/// The manifest a typed resource's configuration or state stands for; `None` while any of it
/// is unknown.
pub(crate) fn manifest(kind: &Kind, typed: &Value) -> Option<Json> {
    // What the provider computes (the uid, the resource version) is no part of the object.
    let configured = |(name, value): (&String, &Value)| {
        if name == "metadata" {
            first(Some(value)).is_none_or(|m| {
                m.as_object().is_none_or(|o| {
                    o.iter()
                        .filter(|(k, _)| !COMPUTED_METADATA.contains(&k.as_str()))
                        .all(|(_, v)| v.is_wholly_known())
                })
            }) && !value.is_unknown()
        } else {
            value.is_wholly_known()
        }
    };
    if !typed.as_object().is_some_and(|o| o.iter().all(configured)) {
        return None;
    }
    let metadata = first(attribute(typed, "metadata"));
    let mut meta = serde_json::Map::new();
    for key in ["name", "namespace", "labels", "annotations"] {
        if key == "namespace" && !kind.namespaced {
            continue;
        }
        if let Some(v) = metadata.and_then(|m| attribute(m, key)) {
            meta.insert(key.to_owned(), v.to_json_revealed());
        }
    }
    let mut object = to_json(kind.kind, kind.fields, typed);
    if let Json::Object(map) = &mut object {
        map.insert("apiVersion".into(), kind.api_version.into());
        map.insert("kind".into(), kind.kind.into());
        map.insert("metadata".into(), Json::Object(meta));
    }
    Some(strip_nulls(&object))
}

/// Only the object's own attributes of a typed value (its metadata and fields), without what
/// the provider adds (`id`, `timeouts`, waits), which another tool's plan may leave unknown.
pub(crate) fn object_part(kind: &Kind, typed: &Value) -> Value {
    let Some(map) = typed.as_object() else {
        return typed.clone();
    };
    let own: Vec<String> = kind
        .fields
        .iter()
        .map(|(f, ty)| name_of(kind.kind, f, ty))
        .collect();
    Value::Object(
        map.iter()
            .filter(|(k, _)| k.as_str() == "metadata" || own.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The typed fields of a (projected) live object.
pub(crate) fn from_json(holder: &str, fields: &[(&str, F)], live: &Json, typed: &mut Value) {
    for (field, ty) in fields {
        let name = name_of(holder, field, ty);
        let value = live.get(*field);
        let converted = match ty {
            F::Inline(inner) => {
                if inner.iter().any(|(f, _)| live.get(*f).is_some()) {
                    let mut block = first(attribute(typed, &name))
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    from_json(&below(holder, field), inner, live, &mut block);
                    Value::List(vec![block])
                } else {
                    Value::List(Vec::new())
                }
            }
            F::Obj(inner) => match value {
                Some(v) if v.is_object() => {
                    let mut block = first(attribute(typed, &name))
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    from_json(&below(holder, field), inner, v, &mut block);
                    Value::List(vec![block])
                }
                _ => Value::List(Vec::new()),
            },
            F::Objs(inner) => {
                let prior = attribute(typed, &name)
                    .and_then(Value::as_list)
                    .map(<[Value]>::to_vec)
                    .unwrap_or_default();
                Value::List(
                    value
                        .and_then(Json::as_array)
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, item)| {
                            let mut block = prior
                                .get(i)
                                .cloned()
                                .unwrap_or_else(|| Value::Object(Default::default()));
                            from_json(&below(holder, field), inner, item, &mut block);
                            block
                        })
                        .collect(),
                )
            }
            F::Base64Map => match value.and_then(Json::as_object) {
                Some(map) => Value::Object(
                    map.iter()
                        .map(|(k, v)| {
                            let decoded = v
                                .as_str()
                                .and_then(|t| {
                                    base64::engine::general_purpose::STANDARD.decode(t).ok()
                                })
                                .map(|b| String::from_utf8_lossy(&b).into_owned())
                                .unwrap_or_default();
                            (k.clone(), Value::sensitive(Value::string(decoded)))
                        })
                        .collect(),
                ),
                None => Value::Null,
            },
            F::Base64 => match value.and_then(Json::as_str) {
                Some(text) => Value::string(
                    base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_else(|_| text.to_owned()),
                ),
                None => Value::Null,
            },
            F::IntOrStr => match value {
                Some(Json::Number(n)) => Value::string(n.to_string()),
                other => other.map_or(Value::Null, Value::from_json),
            },
            F::Mode => match value.and_then(Json::as_i64) {
                Some(mode) => Value::string(format!("0{mode:o}")),
                None => value.map_or(Value::Null, Value::from_json),
            },
            _ => value.map_or(Value::Null, Value::from_json),
        };
        let converted = match (ty, attribute(typed, &name)) {
            // An empty repeated block configured as none stays none.
            (F::Objs(_) | F::Obj(_), None)
                if converted.as_list().is_some_and(<[Value]>::is_empty) =>
            {
                continue;
            }
            _ => converted,
        };
        set(typed, &name, converted);
    }
}

/// A typed state with the live object's values of the fields it manages: what a refresh and
/// an apply record (`object` is the manifest resource's projected live view, `full` the
/// whole live object when known).
fn typed_from_live(kind: &Kind, mut typed: Value, object: &Value, uid: Option<&Value>) -> Value {
    let live = object.to_json_revealed();
    if live.is_object() {
        from_json(kind.kind, kind.fields, &live, &mut typed);
        if let Some(Value::List(blocks)) =
            typed.as_object().and_then(|o| o.get("metadata")).cloned()
            && let Some(mut metadata) = blocks.into_iter().next()
        {
            for key in ["labels", "annotations"] {
                if attribute(&metadata, key).is_some() {
                    let value = live
                        .pointer(&format!("/metadata/{key}"))
                        .map_or(Value::Null, Value::from_json);
                    set(&mut metadata, key, value);
                }
            }
            if let Some(uid) = uid {
                set(&mut metadata, "uid", uid.clone());
            }
            set(&mut typed, "metadata", Value::List(vec![metadata]));
        }
    } else if let Some(uid) = uid {
        set_metadata(&mut typed, "uid", uid.clone());
    }
    typed
}

fn set_metadata(typed: &mut Value, key: &str, value: Value) {
    if let Some(Value::List(blocks)) = typed.as_object().and_then(|o| o.get("metadata")).cloned()
        && let Some(mut metadata) = blocks.into_iter().next()
    {
        set(&mut metadata, key, value);
        set(typed, "metadata", Value::List(vec![metadata]));
    }
}

fn metadata_value<'a>(typed: &'a Value, key: &str) -> Option<&'a Value> {
    first(attribute(typed, "metadata")).and_then(|m| attribute(m, key))
}

/// The `wait` block of the manifest state: what the kind's waiting argument asks for, unless
/// set false (Terraform's default is to wait); the timeout is the `timeouts` of the operation.
fn wait_block(kind: &Kind, typed: &Value) -> Value {
    let Some((argument, what)) = kind.waits else {
        return Value::Null;
    };
    let asked = argument.and_then(|a| attribute(typed, a));
    let waits = match what {
        Await::LoadBalancerWhenAsked | Await::DefaultServiceAccountWhenAsked => {
            asked.and_then(Value::as_bool) == Some(true)
        }
        Await::Phase => true,
        Await::ServiceAccountToken => {
            asked.and_then(Value::as_bool) != Some(false)
                && attribute(typed, "type").and_then(Value::as_str)
                    == Some("kubernetes.io/service-account-token")
        }
        _ => asked.and_then(Value::as_bool) != Some(false),
    };
    if !waits {
        return Value::Null;
    }
    let fields = match what {
        Await::Bound => Value::Object(
            [("status.phase".to_owned(), Value::string("Bound"))]
                .into_iter()
                .collect(),
        ),
        _ => Value::Null,
    };
    let present = match what {
        Await::ServiceAccountToken => Value::List(vec![Value::string("data.token")]),
        _ => Value::Null,
    };
    let phases = match what {
        Await::Phase => asked
            .filter(|a| !a.is_null())
            .cloned()
            .unwrap_or_else(|| Value::List(vec![Value::string("Running")])),
        _ => Value::Null,
    };
    let condition = match what {
        Await::Rollout
        | Await::LoadBalancerWhenAsked
        | Await::Replicas
        | Await::Phase
        | Await::Bound
        | Await::ServiceAccountToken
        | Await::DefaultServiceAccountWhenAsked => Vec::new(),
        Await::Completion => vec![Value::Object(
            [
                ("type".to_owned(), Value::string("Complete")),
                ("status".to_owned(), Value::string("True")),
            ]
            .into_iter()
            .collect(),
        )],
    };
    Value::Object(
        [
            (
                "rollout",
                Value::Bool(matches!(
                    what,
                    Await::Rollout | Await::LoadBalancerWhenAsked | Await::Replicas
                )),
            ),
            ("phase", phases),
            ("present", present),
            (
                "default_service_account",
                Value::Bool(what == Await::DefaultServiceAccountWhenAsked),
            ),
            ("fields", fields),
            ("timeout", Value::Null),
            ("condition", Value::List(condition)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

/// The `kubernetes_manifest` state a typed state stands for: its manifest, and as the live view
/// the same (a typed state holds the live values of its fields).
fn manifest_state(kind: &Kind, typed: &Value, with_object: bool) -> Value {
    let manifest = manifest(kind, typed);
    let manifest_value = manifest.as_ref().map_or(Value::Unknown, Value::from_json);
    let object = if with_object {
        manifest_value.clone()
    } else {
        Value::Unknown
    };
    let uid = metadata_value(typed, "uid").cloned().unwrap_or(Value::Null);
    Value::Object(
        [
            ("manifest", manifest_value),
            ("field_manager", Value::Null),
            // Terraform's typed resources overwrite the fields they set, whoever set them last.
            ("force_conflicts", Value::Bool(true)),
            ("delete_propagation", Value::Null),
            ("force_destroy", Value::Null),
            ("object", object),
            ("uid", uid),
            ("wait", wait_block(kind, typed)),
            (
                "timeouts",
                attribute(typed, "timeouts").cloned().unwrap_or(Value::Null),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

/// A path into the manifest resource's state as a path into the typed resource's.
fn typed_path(kind: &Kind, path: &Path) -> Path {
    let mut steps = path.iter();
    match (steps.next(), steps.next()) {
        (Some(PathStep::Key(root)), Some(PathStep::Key(field))) if root == "manifest" => {
            let mut out = if field == "metadata" {
                vec![PathStep::Key("metadata".into()), PathStep::Index(0)]
            } else if let Some((f, ty)) = kind.fields.iter().find(|(f, _)| f == field) {
                vec![PathStep::Key(name_of(kind.kind, f, ty))]
            } else {
                return vec![PathStep::Key("metadata".into())];
            };
            out.extend(steps.cloned());
            out
        }
        _ => path.clone(),
    }
}

fn typed_attribute(kind: &Kind, attribute: Option<String>) -> Option<String> {
    let attribute = attribute?;
    let rest = attribute.strip_prefix("manifest.")?;
    let (field, tail) = rest.split_once('.').unwrap_or((rest, ""));
    let head = if field == "metadata" {
        "metadata[0]".to_owned()
    } else {
        terraform_name(kind, field)
    };
    Some(if tail.is_empty() {
        head
    } else {
        format!("{head}.{tail}")
    })
}

fn typed_diagnostics(kind: &Kind, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics
        .into_iter()
        .map(|mut d| {
            if d.attribute
                .as_deref()
                .is_some_and(|a| a.starts_with("manifest"))
            {
                d.attribute = typed_attribute(kind, d.attribute.take());
            }
            d
        })
        .collect()
}

pub(crate) fn typed_fact(kind: &Kind, fact: GpuFact) -> GpuFact {
    match fact {
        GpuFact::ConfigMap(mut c) => {
            c.attribute = typed_path(kind, &c.attribute);
            GpuFact::ConfigMap(c)
        }
        GpuFact::Operator(mut o) => {
            o.attribute = typed_path(kind, &o.attribute);
            GpuFact::Operator(o)
        }
        other => other,
    }
}

/// Marks every value of a Secret's `data` sensitive, as `kubernetes_manifest` marks a Secret's:
/// plans, the state and drift hold only their digests.
fn conceal(kind: &Kind, typed: &mut Value) {
    for (field, ty) in kind.fields {
        if !matches!(ty, F::Base64Map) {
            continue;
        }
        conceal_values(typed, &name_of(kind.kind, field, ty));
    }
}

/// Marks each value of the map attribute `name` sensitive (a Secret's data), so that the state
/// holds a digest per key and a refresh can name the keys it reads back.
pub(crate) fn conceal_values(typed: &mut Value, name: &str) {
    if let Some(Value::Object(map)) = typed.as_object().and_then(|o| o.get(name)).cloned() {
        let marked = map
            .into_iter()
            .map(|(k, v)| {
                let v = if v.is_null() || v.is_unknown() {
                    v
                } else {
                    Value::sensitive(v)
                };
                (k, v)
            })
            .collect();
        set(typed, name, Value::Object(marked));
    }
}

/// The `metadata` block is configured, known, and names no object.
pub(crate) fn metadata_without_name(check: &Checker<'_>) -> bool {
    check.get("metadata").is_some()
        && check.get("metadata[0].name").is_none()
        && check
            .config()
            .as_object()
            .and_then(|o| o.get("metadata"))
            .is_none_or(Value::is_wholly_known)
}

/// A typed resource type: the manifest resource of its kind, translated.
pub(crate) struct TypedObjects {
    /// The `kubernetes_manifest` resource every call is translated to.
    pub(crate) inner: Box<dyn Resource>,
    /// The `kubernetes_patch` resource a Secret's write-only data is applied through.
    pub(crate) write_only: Option<Box<dyn Resource>>,
    pub(crate) kind: &'static Kind,
}

/// The write-only data a Secret's apply sets now (its revisions new or changed), as the
/// `data` of a patch; `None` when there is none to set.
fn write_only_data(planned: &Value, prior: Option<&Value>) -> Option<Json> {
    let mut data = serde_json::Map::new();
    for (values, revision, _) in WRITE_ONLY_DATA {
        let now = attribute(planned, revision).and_then(Value::as_number);
        let before = prior
            .and_then(|p| attribute(p, revision))
            .and_then(Value::as_number);
        if now.is_none_or(|r| r < 1.0) || now == before {
            continue;
        }
        for (key, value) in attribute(planned, values)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let text = value.to_json_revealed();
            let text = text.as_str().unwrap_or_default();
            let encoded = if values == "data_wo" {
                base64::engine::general_purpose::STANDARD.encode(text)
            } else {
                text.to_owned()
            };
            data.insert(key.clone(), Json::String(encoded));
        }
    }
    (!data.is_empty()).then(|| serde_json::json!({ "data": data }))
}

/// The `kubernetes_patch` state that applies a Secret's write-only data.
fn write_only_patch(typed: &Value, data: Json) -> Value {
    let metadata = first(attribute(typed, "metadata"));
    let named = |key: &str| {
        metadata
            .and_then(|m| attribute(m, key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    Value::Object(
        [
            ("api_version", Value::string("v1")),
            ("kind", Value::string("Secret")),
            ("name", named("name")),
            ("namespace", named("namespace")),
            ("metadata", Value::Null),
            ("patch", Value::from_json(&data)),
            ("live", Value::Null),
            ("field_manager", Value::string(WRITE_ONLY_MANAGER)),
            ("force", Value::Null),
            ("force_conflicts", Value::Bool(true)),
            ("wait", Value::Null),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

impl TypedObjects {
    /// A typed state from the manifest state the inner resource answered, on `typed`'s
    /// configuration.
    fn typed(&self, typed: &Value, manifest: &Value) -> Value {
        let object = attribute(manifest, "object")
            .cloned()
            .unwrap_or(Value::Null);
        let uid = manifest.as_object().and_then(|o| o.get("uid"));
        typed_from_live(self.kind, typed.clone(), &object, uid)
    }
}

#[async_trait::async_trait]
impl Resource for TypedObjects {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let typed = request.states.clone();
        let inner = ReadResourcesRequest {
            type_name: "kubernetes_manifest".into(),
            states: typed
                .iter()
                .map(|s| manifest_state(self.kind, s, true))
                .collect(),
            sensitive_paths: vec![Vec::new(); typed.len()],
            seeds: vec![],
        };
        let mut response = self.inner.read(inner).await;
        response.states = response
            .states
            .into_iter()
            .zip(&typed)
            .map(|(state, typed)| state.map(|s| self.typed(typed, &s)))
            .collect();
        response.gpu_facts = response
            .gpu_facts
            .into_iter()
            .map(|(i, f)| (i, typed_fact(self.kind, f)))
            .collect();
        response.diagnostics = typed_diagnostics(self.kind, response.diagnostics);
        response
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let config = request.config.clone();
        let prior = request.prior_state.clone();
        let inner = PlanResourceChangeRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: prior.as_ref().map(|p| manifest_state(self.kind, p, true)),
            config: manifest_state(self.kind, &config, false),
            ..request
        };
        let response = self.inner.plan(inner).await;
        let mut planned = config;
        fill_terraform_defaults(self.kind, &mut planned);
        let uid = attribute(&response.planned_state, "uid")
            .cloned()
            .unwrap_or(Value::Unknown);
        let unchanged = prior.as_ref().is_some_and(|p| {
            response.requires_replace.is_empty()
                && manifest(self.kind, p) == manifest(self.kind, &planned)
        });
        set_metadata(&mut planned, "uid", uid);
        conceal(self.kind, &mut planned);
        for key in ["resource_version", "generation"] {
            let value = match &prior {
                Some(p) if unchanged => metadata_value(p, key).cloned().unwrap_or(Value::Null),
                _ => Value::Unknown,
            };
            set_metadata(&mut planned, key, value);
        }
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace: if response.requires_replace.is_empty() {
                Vec::new()
            } else {
                vec!["metadata (name or namespace)".to_owned()]
            },
            gpu_facts: response
                .gpu_facts
                .into_iter()
                .map(|f| typed_fact(self.kind, f))
                .collect(),
            existing: response.existing,
            diagnostics: typed_diagnostics(self.kind, response.diagnostics),
            order: response.order,
        }
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let planned = request.planned_state.clone();
        let typed_prior = request.prior_state.clone();
        let inner = ApplyResourceChangeRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: request
                .prior_state
                .as_ref()
                .map(|p| manifest_state(self.kind, p, true)),
            planned_state: planned
                .as_ref()
                .map(|p| manifest_state(self.kind, p, false)),
            sensitive_paths: Vec::new(),
            ..request
        };
        let mut response = self.inner.apply(inner).await;
        if let (Some(_), Some(planned), Some(write_only)) =
            (&response.new_state, &planned, &self.write_only)
            && let Some(data) = write_only_data(planned, typed_prior.as_ref())
        {
            let applied = write_only
                .apply(ApplyResourceChangeRequest {
                    type_name: "kubernetes_patch".into(),
                    prior_state: None,
                    planned_state: Some(write_only_patch(planned, data)),
                    sensitive_paths: Vec::new(),
                    owner: String::new(),
                    collateral: None,
                    stop: Default::default(),
                    replaced_by: None,
                })
                .await;
            if applied.new_state.is_none() {
                // The Secret is made; its write-only data is not. Recording it without its
                // revision has the next apply set the data again.
                response.diagnostics.extend(applied.diagnostics);
                response.diagnostics.push(Diagnostic::error(
                    "Write-only data not applied",
                    "The Secret was applied but its write-only data was not: the next apply sets it again.",
                ));
                if let Some(mut typed) = response.new_state.take().map(|s| self.typed(planned, &s))
                {
                    for (_, revision, _) in WRITE_ONLY_DATA {
                        set(
                            &mut typed,
                            revision,
                            typed_prior
                                .as_ref()
                                .and_then(|p| attribute(p, revision))
                                .cloned()
                                .unwrap_or(Value::Null),
                        );
                    }
                    return ApplyResourceChangeResponse {
                        new_state: Some(typed),
                        diagnostics: typed_diagnostics(self.kind, response.diagnostics),
                    };
                }
            }
        }
        let new_state = match (response.new_state, planned) {
            (Some(state), Some(planned)) => {
                let mut typed = self.typed(&planned, &state);
                for key in ["resource_version", "generation"] {
                    set_metadata(&mut typed, key, Value::Null);
                }
                Some(typed)
            }
            // A failed delete keeps the prior state as it was.
            (Some(_), None) => typed_prior,
            (None, _) => None,
        };
        ApplyResourceChangeResponse {
            new_state,
            diagnostics: typed_diagnostics(self.kind, response.diagnostics),
        }
    }

    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let inner = PlanDeleteRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: manifest_state(self.kind, &request.prior_state, true),
            ..request
        };
        self.inner.plan_delete(inner).await
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let state = self.inner.import(id).await?;
        let schema = schema(self.kind);
        let mut typed = Value::Object(
            schema
                .attributes
                .keys()
                .map(|k| (k.clone(), Value::Null))
                .chain(schema.blocks.iter().map(|(k, b)| {
                    // An absent block of at most one is null in a plan, a repeated one empty.
                    let absent = if b.nesting == BlockNesting::Single {
                        Value::Null
                    } else {
                        Value::List(Vec::new())
                    };
                    (k.clone(), absent)
                }))
                .collect(),
        );
        let object = attribute(&state, "object").cloned().unwrap_or(Value::Null);
        let live = object.to_json_revealed();
        // Every field the kind has, as the object has them.
        from_json(self.kind.kind, self.kind.fields, &live, &mut typed);
        let mut metadata = Value::Object(Default::default());
        for key in ["name", "namespace", "labels", "annotations"] {
            if key == "namespace" && !self.kind.namespaced {
                continue;
            }
            let mut value = live.pointer(&format!("/metadata/{key}")).cloned();
            // What the API server and kubectl write themselves is no one's configuration.
            if let Some(Json::Object(map)) = &mut value {
                for own in SET_BY_THE_CLUSTER {
                    map.remove(*own);
                }
                if map.is_empty() {
                    value = None;
                }
            }
            set(
                &mut metadata,
                key,
                value.as_ref().map_or(Value::Null, Value::from_json),
            );
        }
        for key in ["generate_name", "resource_version", "generation"] {
            set(&mut metadata, key, Value::Null);
        }
        set(
            &mut metadata,
            "uid",
            attribute(&state, "uid").cloned().unwrap_or(Value::Null),
        );
        set(&mut typed, "metadata", Value::List(vec![metadata]));
        Ok(typed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terraform_names_follow_the_rule_and_the_exceptions() {
        for (holder, field, ty, name) in [
            ("Service.spec", "clusterIPs", F::List, "cluster_ips"),
            ("Service.spec", "externalIPs", F::List, "external_ips"),
            ("Pod.spec", "hostIPC", F::Bool, "host_ipc"),
            (
                "ClusterRole.rules",
                "nonResourceURLs",
                F::List,
                "non_resource_urls",
            ),
            (
                "Pod.spec.volumes.azureDisk",
                "diskURI",
                F::Str,
                "data_disk_uri",
            ),
            (
                "Job.spec.template.spec",
                "containers",
                F::Objs(&[]),
                "container",
            ),
            (
                "Deployment.spec.template.spec",
                "imagePullSecrets",
                F::Objs(&[]),
                "image_pull_secrets",
            ),
            (
                "ServiceAccount",
                "imagePullSecrets",
                F::Objs(&[]),
                "image_pull_secret",
            ),
            ("DaemonSet.spec", "updateStrategy", F::Obj(&[]), "strategy"),
            (
                "StatefulSet.spec",
                "updateStrategy",
                F::Obj(&[]),
                "update_strategy",
            ),
            ("Pod.spec.containers.resources", "limits", F::Map, "limits"),
            ("LimitRange.spec", "limits", F::Objs(&[]), "limit"),
            ("Pod.spec.volumes.rbd", "image", F::Str, "rbd_image"),
            ("Pod.spec.containers", "image", F::Str, "image"),
            ("Pod.spec.dnsConfig", "options", F::Objs(&[]), "option"),
            ("Pod.spec.volumes.configMap", "items", F::Objs(&[]), "items"),
            ("CronJob.spec", "timeZone", F::Str, "timezone"),
        ] {
            assert_eq!(name_of(holder, field, &ty), name, "{holder}.{field}");
        }
    }

    fn kind(name: &str) -> &'static Kind {
        kind_of(name).unwrap()
    }

    /// A Deployment as Terraform's provider writes it, in blocks, is the object Kubernetes
    /// takes: repeated blocks in the singular, ports as numbers, modes from octal, the GPU
    /// request where a manifest has it; and the object read back is the configuration.
    #[test]
    fn a_typed_deployment_is_its_manifest_and_back() {
        let typed = Value::from_json(&json!({
            "metadata": [{"name": "infer", "namespace": "gpu"}],
            "wait_for_rollout": false,
            "spec": [{
                "replicas": 2,
                "selector": [{"match_labels": {"app": "infer"}}],
                "strategy": [{"rolling_update": [{"max_surge": "25%", "max_unavailable": "1"}]}],
                "template": [{
                    "metadata": [{"labels": {"app": "infer"}}],
                    "spec": [{
                        "container": [{
                            "name": "server",
                            "image": "vllm/vllm-openai:v0.6.0",
                            "port": [{"container_port": 8000}],
                            "resources": [{"limits": {"nvidia.com/gpu": "1"}}],
                            "liveness_probe": [{"http_get": [{"path": "/health", "port": "8000"}]}],
                            "volume_mount": [{"name": "cfg", "mount_path": "/etc/cfg"}]
                        }],
                        "image_pull_secrets": [{"name": "registry"}],
                        "toleration": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                        "volume": [{"name": "cfg", "config_map": [{"name": "cfg", "default_mode": "0644"}]}]
                    }]
                }]
            }]
        }));
        let manifest = manifest(kind("kubernetes_deployment_v1"), &typed).unwrap();
        assert_eq!(
            manifest,
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "infer", "namespace": "gpu"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "infer"}},
                    "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                    "template": {
                        "metadata": {"labels": {"app": "infer"}},
                        "spec": {
                            "containers": [{
                                "name": "server",
                                "image": "vllm/vllm-openai:v0.6.0",
                                "ports": [{"containerPort": 8000}],
                                "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                "livenessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]
                            }],
                            "imagePullSecrets": [{"name": "registry"}],
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}]
                        }
                    }
                }
            })
        );
        let mut back = typed.clone();
        from_json(
            "Deployment",
            kind("kubernetes_deployment").fields,
            &manifest,
            &mut back,
        );
        // The fields the configuration leaves out are null in the state.
        assert_eq!(
            strip_nulls(&back.to_json_revealed()),
            typed.to_json_revealed()
        );
    }

    /// Terraform waits for a rollout, a load balancer and a job unless told not to; the
    /// manifest's wait says the same, with the operation's timeouts.
    #[test]
    fn waits_are_terraforms_defaults() {
        let state = |kind: &Kind, extra: Json| {
            let mut typed = json!({"metadata": [{"name": "a", "namespace": "n"}]});
            typed
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            manifest_state(kind, &Value::from_json(&typed), false)
        };
        let deployment = kind("kubernetes_deployment_v1");
        let waited = state(deployment, json!({"timeouts": {"create": "20m"}}));
        let wait = attribute(&waited, "wait").unwrap();
        assert_eq!(attribute(wait, "rollout"), Some(&Value::Bool(true)));
        assert_eq!(
            attribute(&waited, "timeouts").and_then(|t| attribute(t, "create")),
            Some(&Value::string("20m"))
        );
        let unwaited = state(deployment, json!({"wait_for_rollout": false}));
        assert_eq!(attribute(&unwaited, "wait"), None);
        let job = state(kind("kubernetes_job_v1"), json!({}));
        let condition = attribute(attribute(&job, "wait").unwrap(), "condition").unwrap();
        assert_eq!(
            condition.to_json_revealed(),
            json!([{"type": "Complete", "status": "True"}])
        );
        assert_eq!(
            attribute(&state(kind("kubernetes_cron_job_v1"), json!({})), "wait"),
            None
        );
    }
}
