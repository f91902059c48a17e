//! Selectors and claims against devices as NVIDIA's DRA driver publishes them.

use super::selector::{Environment, Selector};
use crate::{Model, Severity, Sourced};
use gpustack_protocol::{
    ClusterFact, DeviceRequestFact, DeviceRequestKind, DraAttribute, DraDevice, DraDriverFact,
    GpuFact, GpuShape, NodeFact, PoolFact, PoolShape, path, path_text,
};
use serde_json::{Value as Json, json};

/// A full GPU as the driver publishes it.
pub(crate) fn gpu(minor: u32, product: &str, memory: &str) -> DraDevice {
    let s = |v: &str| DraAttribute::String(v.into());
    let architecture = if product.contains("H100") {
        "Hopper"
    } else {
        "Ampere"
    };
    let capability = if product.contains("H100") {
        "9.0.0"
    } else {
        "8.0.0"
    };
    DraDevice {
        name: format!("gpu-{minor}"),
        kind: "gpu".into(),
        product: product.into(),
        memory_mib: None,
        attributes: [
            ("type", s("gpu")),
            ("uuid", s(&format!("GPU-{minor:08}"))),
            ("productName", s(product)),
            ("brand", s("Nvidia")),
            ("architecture", s(architecture)),
            (
                "cudaComputeCapability",
                DraAttribute::Version(capability.into()),
            ),
            ("driverVersion", DraAttribute::Version("580.65.6".into())),
            ("cudaDriverVersion", DraAttribute::Version("13.0.0".into())),
            (
                "resource.kubernetes.io/pciBusID",
                s(&format!("0000:{:02x}:00.0", 0x10 + minor)),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
        capacity: [("memory".to_owned(), memory.to_owned())].into(),
        consumes: Default::default(),
    }
}

/// A static MIG device of GPU `minor`.
fn mig(minor: u32, profile: &str, start: u32, product: &str) -> DraDevice {
    let mut device = gpu(minor, product, "9856Mi");
    device.name = format!("gpu-{minor}-mig-{}-19-{start}", profile.replace('.', ""));
    device.kind = "mig".into();
    device
        .attributes
        .insert("type".into(), DraAttribute::String("mig".into()));
    device
        .attributes
        .insert("profile".into(), DraAttribute::String(profile.into()));
    device.attributes.insert(
        "parentUUID".into(),
        DraAttribute::String(format!("GPU-{minor:08}")),
    );
    device
        .capacity
        .insert("multiprocessors".into(), "14".into());
    device
}

fn live(nodes: Vec<(&str, Vec<DraDevice>)>) -> GpuFact {
    GpuFact::Cluster(ClusterFact {
        nodes: nodes
            .into_iter()
            .map(|(name, devices)| NodeFact {
                name: name.into(),
                dra_devices: devices,
                ..NodeFact::default()
            })
            .collect(),
        device_classes: [
            (
                "gpu.nvidia.com".to_owned(),
                json!({"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}),
            ),
            (
                "mig.nvidia.com".to_owned(),
                json!({"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}),
            ),
        ]
        .into(),
        ..ClusterFact::default()
    })
}

fn a100_node(name: &str, gpus: u32) -> (&str, Vec<DraDevice>) {
    (
        name,
        (0..gpus)
            .map(|i| gpu(i, "NVIDIA A100-SXM4-80GB", "80Gi"))
            .collect(),
    )
}

fn template(name: &str, requests: Json) -> GpuFact {
    GpuFact::DeviceRequest(DeviceRequestFact {
        kind: DeviceRequestKind::ResourceClaimTemplate,
        name: name.into(),
        namespace: Some("default".into()),
        spec: Some(json!({"devices": {"requests": requests}})),
        attribute: path(["manifest", "spec", "spec"]),
    })
}

fn one(class: &str, selector: &str) -> Json {
    json!([{"name": "gpu", "exactly": {"deviceClassName": class, "selectors": [{"cel": {"expression": selector}}]}}])
}

/// The findings of the facts, as `severity summary @ path: detail`.
fn check(facts: &[GpuFact]) -> Vec<String> {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|fact| Sourced {
            address: "kubernetes_manifest.claim",
            fact,
        })
        .collect();
    let model = Model::build(&sourced);
    model
        .dra_findings()
        .0
        .iter()
        .map(|f| {
            format!(
                "{} {} @ {}: {}",
                if f.severity == Severity::Error {
                    "error"
                } else {
                    "warning"
                },
                f.summary,
                path_text(&f.path),
                f.detail
            )
        })
        .collect()
}

fn verdict(selector: &str, device: &DraDevice) -> Result<bool, String> {
    let env = Environment::default();
    let compiled = Selector::compile(selector);
    if let Some(why) = compiled.refused() {
        return Err(format!("refused: {why}"));
    }
    let device = super::devices::Device::from_live(device);
    let domains = compiled.domains().clone();
    compiled.matches(
        &env,
        &super::devices::cel_value(&env, &device, None, &domains),
    )
}

#[test]
fn selectors_read_the_device_as_the_scheduler_does() {
    let a100 = gpu(0, "NVIDIA A100-SXM4-80GB", "80Gi");
    let yes = [
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'",
        "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')",
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')",
        // Quantities compare exactly: 80Gi is 81920Mi.
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('81920Mi')) == 0",
        "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",
        "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('570.0.0'))",
        "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('8.0.0')) >= 0",
        "device.attributes['resource.kubernetes.io'].pciBusID == '0000:10:00.0'",
        // A domain no attribute has is an empty map, not an error.
        "!has(device.attributes['example.com'].model)",
        // An error on one side of && is absorbed by false on the other, as in CEL.
        "!(device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && device.attributes['gpu.nvidia.com'].type == 'mig')",
    ];
    for selector in yes {
        assert_eq!(verdict(selector, &a100), Ok(true), "{selector}");
    }
    assert_eq!(
        verdict(
            "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))",
            &a100
        ),
        Ok(false)
    );
    // An attribute the device lacks is the runtime error the scheduler stops at.
    let missing = verdict(
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        &a100,
    );
    assert!(
        missing.as_ref().is_err_and(|e| e.contains("profile")),
        "{missing:?}"
    );
    // So is a literal semver() cannot parse.
    assert!(
        verdict(
            "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('v570'))",
            &a100
        )
        .is_err()
    );
}

#[test]
fn what_the_api_server_refuses_is_found_without_a_device() {
    for (selector, why) in [
        (
            "device.attributes['gpu.nvidia.com'].productName ==",
            "syntax error",
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory >= quantity('40Gi')",
            "found no matching overload for '>=' applied to a Quantity",
        ),
        (
            "semver('1.0.0') < device.attributes['gpu.nvidia.com'].driverVersion",
            "found no matching overload for '<' applied to a Semver",
        ),
        ("gpu.productName == 'x'", "undeclared reference to 'gpu'"),
        ("device.model == 'x'", "undefined field 'model' of device"),
    ] {
        let compiled = Selector::compile(selector);
        assert!(
            compiled.refused().is_some_and(|r| r.contains(why)),
            "{selector}: {:?}",
            compiled.refused()
        );
    }
    // A comprehension's own variables are declared.
    assert_eq!(
        Selector::compile("['A100', 'H100'].exists(m, device.attributes['gpu.nvidia.com'].productName.contains(m))")
            .refused(),
        None
    );
}

#[test]
fn an_h100_selector_on_a100_nodes_is_refused_at_the_selector() {
    let h100 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'";
    let found = check(&[
        live(vec![a100_node("a", 8), a100_node("b", 8)]),
        template("h100", one("gpu.nvidia.com", h100)),
    ]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("error Selector matches no device @ manifest.spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: selector 0 of request gpu of ResourceClaimTemplate default/h100 matches none of the 16 gpu.nvidia.com device(s) of 2 live node(s)"),
        "{found:#?}"
    );
    assert!(
        found[0].contains("16 × gpu NVIDIA A100-SXM4-80GB"),
        "{found:#?}"
    );
    let h100_node = (
        "h",
        (0..8)
            .map(|i| gpu(i, "NVIDIA H100 80GB HBM3", "81559Mi"))
            .collect(),
    );
    assert_eq!(
        check(&[
            live(vec![a100_node("a", 8), h100_node]),
            template("h100", one("gpu.nvidia.com", h100)),
        ]),
        Vec::<String>::new()
    );
}

#[test]
fn counts_all_mode_first_available_and_several_requests_are_allocated_per_node() {
    let cluster = || live(vec![a100_node("a", 4), a100_node("b", 2)]);
    let any = "device.attributes['gpu.nvidia.com'].architecture == 'Ampere'";
    let count = |n: u64| json!([{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": n, "selectors": [{"cel": {"expression": any}}]}}]);
    assert!(check(&[cluster(), template("four", count(4))]).is_empty());
    let five = check(&[cluster(), template("five", count(5))]);
    assert!(
        five.len() == 1
            && five[0].starts_with("error More devices than any node has @ manifest.spec.spec.devices.requests[0].exactly.count: Request gpus of ResourceClaimTemplate default/five asks for 5 devices on one node, but the most any node offers that match is 4 (node a)"),
        "{five:#?}"
    );
    let all = json!([{"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]);
    assert!(check(&[cluster(), template("all", all)]).is_empty());
    // The first alternative no node has is skipped; the second fits.
    let h100 = "device.attributes['gpu.nvidia.com'].productName.contains('H100')";
    let first_available = json!([{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression": h100}}]},
        {"name": "a100", "deviceClassName": "gpu.nvidia.com", "count": 2}
    ]}]);
    assert!(check(&[cluster(), template("fa", first_available)]).is_empty());
    let none_fits = json!([{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression": h100}}]},
        {"name": "many", "deviceClassName": "gpu.nvidia.com", "count": 9}
    ]}]);
    let found = check(&[cluster(), template("nf", none_fits)]);
    assert!(
        found.len() == 1
            && found[0].starts_with("error No alternative of the request can be allocated @ manifest.spec.spec.devices.requests[0]:"),
        "{found:#?}"
    );
    // Two requests of 2 and 3 fit node a (4) alone, not together.
    let two = json!([
        {"name": "x", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "y", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 3}}
    ]);
    let found = check(&[cluster(), template("two", two)]);
    assert!(
        found.len() == 1 && found[0].starts_with("error No node can give all the claim's requests @ manifest.spec.spec.devices.requests:"),
        "{found:#?}"
    );
}

#[test]
fn mig_devices_are_selected_through_their_class_and_runtime_errors_are_quoted() {
    let product = "NVIDIA A100-SXM4-80GB";
    let node = (
        "m",
        vec![
            mig(0, "1g.10gb", 0, product),
            mig(0, "1g.10gb", 1, product),
            mig(0, "3g.40gb", 4, product),
            gpu(1, product, "80Gi"),
        ],
    );
    let profile = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'";
    assert!(
        check(&[
            live(vec![node.clone()]),
            template("mig", one("mig.nvidia.com", profile))
        ])
        .is_empty()
    );
    // Through the full-GPU class, `profile` is missing on every device it selects.
    let found = check(&[
        live(vec![node.clone()]),
        template("wrong", one("gpu.nvidia.com", profile)),
    ]);
    assert!(
        found.len() == 1
            && found[0].starts_with("error Selector fails on the devices @ manifest.spec.spec.devices.requests[0].exactly.selectors[0].cel.expression:")
            && found[0].contains("The scheduler leaves the claim Pending with this error"),
        "{found:#?}"
    );
    let sm = "device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity('10'))";
    assert!(check(&[live(vec![node]), template("sm", one("mig.nvidia.com", sm))]).is_empty());
}

#[test]
fn a_missing_device_class_and_a_refused_selector_are_located() {
    let found = check(&[
        live(vec![a100_node("a", 1)]),
        template("nc", one("gpus.nvidia.com", "true")),
        template(
            "bad",
            one(
                "gpu.nvidia.com",
                "device.capacity['gpu.nvidia.com'].memory > quantity('1Gi')",
            ),
        ),
    ]);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().any(|f| f.starts_with("error DeviceClass not found @ manifest.spec.spec.devices.requests[0].exactly.deviceClassName")), "{found:#?}");
    assert!(found.iter().any(|f| f.starts_with("error The API server refuses this selector @ manifest.spec.spec.devices.requests[0].exactly.selectors[0].cel.expression")), "{found:#?}");
}

fn pool(name: &str, model: &str, labels: &[(&str, &str)]) -> GpuFact {
    GpuFact::Pool(PoolFact {
        kind: "nodepool".into(),
        name: name.into(),
        node_labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        labels_attribute: path(["node_labels"]),
        before: None,
        after: Some(PoolShape {
            min_nodes: 2,
            max_nodes: 2,
            machine: "p5.48xlarge".into(),
            gpus: Some(GpuShape {
                count: 8,
                model: model.into(),
                memory_gb: 80,
                source: "built-in table".into(),
            }),
            sharing: None,
        }),
        new: true,
        managed_gpu_software: None,
        removes: None,
    })
}

fn driver() -> GpuFact {
    GpuFact::DraDriver(DraDriverFact {
        source: gpustack_protocol::DraDriverSource::Chart,
        release: "nvidia-dra/dra".into(),
        values: Some(json!({"gpuResourcesEnabledOverride": true})),
        values_before: None,
        attribute: path(["values"]),
    })
}

#[test]
fn planned_dra_pools_offer_the_devices_of_the_built_in_table() {
    let h100 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'";
    let empty = GpuFact::Cluster(ClusterFact::default());
    // An H100 pool the driver serves: the chart's classes, the table's product name.
    assert_eq!(
        check(&[
            empty.clone(),
            driver(),
            pool("h100", "H100", &[]),
            template("t", one("gpu.nvidia.com", h100))
        ]),
        Vec::<String>::new()
    );
    let found = check(&[
        empty.clone(),
        driver(),
        pool("a100", "A100", &[]),
        template("t", one("gpu.nvidia.com", h100)),
    ]);
    assert!(
        found.len() == 1 && found[0].contains("matches none of the 8 gpu.nvidia.com device(s) of planned pool(s) kubernetes_manifest.claim"),
        "{found:#?}"
    );
    // What only a published node tells (its driver version) is not guessed: not refused, and
    // said to be unchecked.
    let driver_version =
        "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('999.0.0'))";
    let found = check(&[
        empty.clone(),
        driver(),
        pool("h100", "H100", &[]),
        template("t", one("gpu.nvidia.com", driver_version)),
    ]);
    assert!(
        found.len() == 1 && found[0].starts_with("warning Request not checked in full"),
        "{found:#?}"
    );
    // Without the DRA driver, its classes are not there either.
    let found = check(&[
        empty,
        pool("h100", "H100", &[]),
        template("t", one("gpu.nvidia.com", h100)),
    ]);
    assert!(
        found.len() == 1 && found[0].starts_with("error DeviceClass not found"),
        "{found:#?}"
    );
    // A pool the GPU Operator's device plugin serves publishes no DRA devices.
    let operator = operator_values(json!({"devicePlugin": {"enabled": true}}));
    let found = check(&[
        GpuFact::Cluster(ClusterFact::default()),
        operator.clone(),
        driver(),
        pool("h100", "H100", &[]),
        template("t", one("gpu.nvidia.com", h100)),
    ]);
    assert!(
        found.len() == 2
            && found[0].starts_with("error The device plugin and the DRA driver on one node")
            && found[1].starts_with("warning No DRA devices known"),
        "{found:#?}"
    );
    assert!(
        check(&[
            GpuFact::Cluster(ClusterFact::default()),
            operator,
            driver(),
            pool(
                "h100",
                "H100",
                &[("nvidia.com/gpu.deploy.device-plugin", "false")]
            ),
            template("t", one("gpu.nvidia.com", h100))
        ])
        .is_empty()
    );
}

#[test]
fn each_selector_is_compiled_once_and_evaluated_per_distinct_device() {
    let nodes: Vec<(String, Vec<DraDevice>)> = (0..50)
        .map(|n| {
            (
                format!("n{n}"),
                (0..8)
                    .map(|i| gpu(i, "NVIDIA A100-SXM4-80GB", "80Gi"))
                    .collect(),
            )
        })
        .collect();
    let cluster = live(nodes.iter().map(|(n, d)| (n.as_str(), d.clone())).collect());
    let selector = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')";
    let facts = [
        cluster,
        template("a", one("gpu.nvidia.com", selector)),
        template("b", one("gpu.nvidia.com", selector)),
    ];
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|fact| Sourced { address: "x", fact })
        .collect();
    let (found, stats) = Model::build(&sourced).dra_findings();
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(stats.devices, 400);
    // The class's selector and the claims' one, once each.
    assert_eq!(stats.compiled, 3);
    // One evaluation per selector per distinct value it reads (the class reads driver and
    // type, the claims' selector the product name): 400 identical GPUs cost two.
    assert_eq!(stats.evaluated, 2, "{stats:?}");
}

fn driver_with(values: Json) -> GpuFact {
    GpuFact::DraDriver(DraDriverFact {
        source: gpustack_protocol::DraDriverSource::Chart,
        release: "nvidia-dra/dra".into(),
        values: Some(values),
        values_before: None,
        attribute: path(["values"]),
    })
}

fn all_findings(facts: &[GpuFact]) -> Vec<String> {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|fact| Sourced {
            address: "helm_release.x",
            fact,
        })
        .collect();
    Model::build(&sourced)
        .findings()
        .iter()
        .map(|f| format!("{} @ {}: {}", f.summary, path_text(&f.path), f.detail))
        .collect()
}

#[test]
fn feature_gates_the_driver_refuses_together_are_located_at_the_gate() {
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        driver_with(
            json!({"gpuResourcesEnabledOverride": true, "featureGates": {"DynamicMIG": true, "MPSSupport": true}}),
        ),
    ]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("DRA driver feature gates refused together @ values.featureGates.DynamicMIG: the DRA driver release nvidia-dra/dra sets feature gates the driver refuses at start (\"feature gate DynamicMIG is currently mutually exclusive with MPSSupport\")"),
        "{found:#?}"
    );
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        driver_with(
            json!({"gpuResourcesEnabledOverride": true, "featureGates": {"DeviceMetadata": true}}),
        ),
    ]);
    assert!(
        found.len() == 1
            && found[0].contains(
                "feature gate DeviceMetadata requires PassthroughSupport to also be enabled"
            ),
        "{found:#?}"
    );
    // The chart's own refusal.
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        driver_with(json!({})),
    ]);
    assert!(
        found.len() == 1
            && found[0].starts_with("The DRA driver chart refuses to install @ values"),
        "{found:#?}"
    );
}

#[test]
fn the_device_plugin_and_the_dra_driver_on_one_pool_is_refused() {
    let operator = operator_values(json!({"devicePlugin": {"enabled": true}}));
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        operator.clone(),
        driver_with(json!({"gpuResourcesEnabledOverride": true})),
        pool("gpu", "H100", &[]),
    ]);
    assert!(
        found.iter().any(|f| f
            .starts_with("The device plugin and the DRA driver on one node @ values: ")
            && f.contains("nodepool gpu (the GPU Operator's device plugin)")),
        "{found:#?}"
    );
    // The pool opts out of the device plugin: one driver per node.
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        operator,
        driver_with(json!({"gpuResourcesEnabledOverride": true})),
        pool(
            "gpu",
            "H100",
            &[("nvidia.com/gpu.deploy.device-plugin", "false")],
        ),
    ]);
    assert!(
        !found.iter().any(|f| f.contains("on one node")),
        "{found:#?}"
    );
}

#[test]
fn a_gpu_cluster_beside_a_cluster_policy_is_refused() {
    let values = operator_values;
    let found = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        values(json!({"gpuCluster": {"deployCR": true}})),
    ]);
    assert!(
        found.iter().any(|f| f.starts_with(
            "A GPUCluster and a ClusterPolicy in one cluster @ values.gpuCluster.deployCR"
        )),
        "{found:#?}"
    );
    let alone = all_findings(&[
        GpuFact::Cluster(ClusterFact::default()),
        values(json!({"gpuCluster": {"deployCR": true}, "clusterPolicy": {"deployCR": false}})),
    ]);
    assert!(alone.is_empty(), "{alone:#?}");
    // A live ClusterPolicy: no in-place migration.
    let live = GpuFact::Cluster(ClusterFact {
        policy: Some(json!({"devicePlugin": {"enabled": true}})),
        ..ClusterFact::default()
    });
    let found = all_findings(&[
        live,
        values(json!({"gpuCluster": {"deployCR": true}, "clusterPolicy": {"deployCR": false}})),
    ]);
    assert!(
        found.iter().any(|f| f
            .starts_with("A GPUCluster and a ClusterPolicy in one cluster @ values.draDriver")
            && f.contains("the cluster runs a ClusterPolicy")),
        "{found:#?}"
    );
}

#[test]
fn the_capacity_section_lists_the_devices_a_planned_dra_pool_will_publish() {
    let facts = [
        GpuFact::Cluster(ClusterFact::default()),
        driver(),
        pool("h100", "H100", &[]),
    ];
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|fact| Sourced {
            address: "eks_nodegroup.h100",
            fact,
        })
        .collect();
    let lines: Vec<String> = Model::build(&sourced)
        .capacity()
        .iter()
        .map(|(_, c)| c.text())
        .filter(|t| t.contains("DRA"))
        .collect();
    assert_eq!(
        lines,
        [
            "nodepool h100: 2 × p5.48xlarge: gpu.nvidia.com devices (DRA) 0 → 16 (per node 8 × gpu NVIDIA H100 80GB HBM3 (81559 MiB), published by NVIDIA's DRA driver, the device plugin off; devices from the built-in table)"
        ]
    );
}

/// The GPU Operator chart's values, as the helm provider reports a release of it.
fn operator_values(values: Json) -> GpuFact {
    GpuFact::Operator(gpustack_protocol::OperatorFact {
        source: gpustack_protocol::OperatorSource::HelmValues,
        namespace: Some("gpu-operator".into()),
        settings: Some(values),
        settings_before: None,
        attribute: path(["values"]),
    })
}

fn constrained(requests: Json, constraints: Json) -> GpuFact {
    GpuFact::DeviceRequest(DeviceRequestFact {
        kind: DeviceRequestKind::ResourceClaim,
        name: "pair".into(),
        namespace: Some("default".into()),
        spec: Some(json!({"devices": {"requests": requests, "constraints": constraints}})),
        attribute: path(["manifest", "spec"]),
    })
}

#[test]
fn match_attribute_ties_the_devices_of_the_requests_it_names() {
    let two = json!([{"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]);
    let node = live(vec![a100_node("a", 2)]);
    let matching = |attribute: &str| json!([{"requests": [], "matchAttribute": attribute}]);
    // Both GPUs are A100s, on two PCI buses.
    assert_eq!(
        check(&[
            node.clone(),
            constrained(two.clone(), matching("gpu.nvidia.com/productName"))
        ]),
        Vec::<String>::new()
    );
    for attribute in [
        "resource.kubernetes.io/pciBusID",
        // No device has it: none can serve a request it ties.
        "resource.kubernetes.io/pcieRoot",
    ] {
        let found = check(&[node.clone(), constrained(two.clone(), matching(attribute))]);
        assert!(
            found.len() == 1
                && found[0].starts_with("error No node can give all the claim's requests")
                && found[0].contains(&format!("agreeing on {attribute}")),
            "{found:#?}"
        );
    }
    // Two MIG devices of one parent GPU: only where one GPU holds two.
    let halves = json!([
        {"name": "a", "exactly": {"deviceClassName": "mig.nvidia.com"}},
        {"name": "b", "exactly": {"deviceClassName": "mig.nvidia.com"}},
    ]);
    let parent = json!([{"requests": ["a", "b"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]);
    let product = "NVIDIA A100-SXM4-80GB";
    let apart = live(vec![(
        "m",
        vec![mig(0, "1g.10gb", 0, product), mig(1, "1g.10gb", 0, product)],
    )]);
    let found = check(&[apart, constrained(halves.clone(), parent.clone())]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let together = live(vec![(
        "m",
        vec![
            mig(0, "1g.10gb", 0, product),
            mig(1, "1g.10gb", 0, product),
            mig(1, "1g.10gb", 1, product),
        ],
    )]);
    assert_eq!(
        check(&[together, constrained(halves, parent)]),
        Vec::<String>::new()
    );
    // distinctAttribute is not checked, and the plan says so.
    let found = check(&[
        node,
        constrained(
            two,
            json!([{"requests": [], "distinctAttribute": "resource.kubernetes.io/pciBusID"}]),
        ),
    ]);
    assert!(
        found.len() == 1
            && found[0].starts_with(
                "warning Claim constraints not checked @ manifest.spec.devices.constraints"
            ),
        "{found:#?}"
    );
}

/// One H100 as the driver publishes it under DynamicMIG: the full GPU consuming its whole
/// counter set, and MIG partitions consuming their memory slices and multiprocessors.
fn partitionable_h100() -> GpuFact {
    let set = "gpu-0-counter-set";
    let mut counters: std::collections::BTreeMap<String, String> = (0..8)
        .map(|i| (format!("memory-slice-{i}"), "1".to_owned()))
        .collect();
    counters.insert("multiprocessors".into(), "132".into());
    let mut full = gpu(0, "NVIDIA H100 80GB HBM3", "80640Mi");
    full.consumes = [(set.to_owned(), counters.clone())].into();
    let mut devices = vec![full];
    for (profile, id, sms, slices, starts) in [
        ("1g.10gb", 19, "16", 1, &[0, 1, 2, 3, 4, 5, 6][..]),
        ("3g.40gb", 9, "60", 4, &[0, 4][..]),
        ("4g.40gb", 5, "64", 4, &[0][..]),
        ("7g.80gb", 0, "132", 8, &[0][..]),
    ] {
        for &start in starts {
            let mut device = mig(0, profile, start, "NVIDIA H100 80GB HBM3");
            device.name = format!("gpu-0-mig-{}-{id}-{start}", profile.replace('.', ""));
            let mut uses: std::collections::BTreeMap<String, String> = (start..start + slices)
                .map(|i| (format!("memory-slice-{i}"), "1".to_owned()))
                .collect();
            uses.insert("multiprocessors".into(), sms.into());
            device.consumes = [(set.to_owned(), uses)].into();
            devices.push(device);
        }
    }
    let GpuFact::Cluster(mut cluster) = live(vec![("h100-0", devices)]) else {
        unreachable!()
    };
    cluster.nodes[0].dra_counters = [(set.to_owned(), counters)].into();
    GpuFact::Cluster(cluster)
}

fn profiles(count: u64, profiles: &[&str]) -> Json {
    let list = profiles
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>()
        .join(", ");
    json!([{"name": "mig", "exactly": {
        "deviceClassName": "mig.nvidia.com",
        "count": count,
        "selectors": [{"cel": {"expression": format!("device.attributes['gpu.nvidia.com'].profile in [{list}]")}}],
    }}])
}

#[test]
fn partitions_of_one_gpu_are_allocated_within_its_shared_counters() {
    let node = partitionable_h100();
    let fine = [
        // 4g at slices 0–3 and 3g at 4–7: 124 of 132 multiprocessors.
        profiles(2, &["4g.40gb", "3g.40gb"]),
        // Seven 1g on seven slices: 112 multiprocessors.
        profiles(7, &["1g.10gb"]),
        profiles(2, &["3g.40gb"]),
    ];
    for requests in fine {
        assert_eq!(
            check(&[node.clone(), template("fine", requests.clone())]),
            Vec::<String>::new(),
            "{requests}"
        );
    }
    // Two devices match, but 4g and 7g share slices 0–3.
    let found = check(&[
        node.clone(),
        template("overlap", profiles(2, &["4g.40gb", "7g.80gb"])),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("error More devices than any node can give at once @ manifest.spec.spec.devices.requests[0].exactly.count"),
        "{found:?}"
    );
    // Three of one 4g and two 3g: the 4g overlaps the first 3g.
    let found = check(&[
        node.clone(),
        template("too-many", profiles(3, &["4g.40gb", "3g.40gb"])),
    ]);
    assert!(found[0].contains("can give at once"), "{found:?}");
    // Every MIG partition of the node at once cannot be: they overlap.
    let all = json!([{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "All"}}]);
    let found = check(&[node.clone(), template("all", all)]);
    assert!(
        found[0].starts_with("error Not every matching device can be allocated at once @ manifest.spec.spec.devices.requests[0].exactly.allocationMode"),
        "{found:?}"
    );
    // The full GPU and a partition of it exclude each other, in two requests of one claim.
    let both = json!([
        {"name": "whole", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
        {"name": "part", "exactly": {"deviceClassName": "mig.nvidia.com"}},
    ]);
    let found = check(&[node, template("both", both)]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("No node can give all the claim's requests"),
        "{found:?}"
    );
}

#[test]
fn counters_are_summed_exactly_in_any_unit() {
    use super::devices::quantity_nanos;
    assert_eq!(quantity_nanos("1"), Some(1_000_000_000));
    assert_eq!(quantity_nanos("80Gi"), quantity_nanos("81920Mi"));
    assert_eq!(quantity_nanos("1.5k"), quantity_nanos("1500"));
    assert_eq!(quantity_nanos("2e3"), quantity_nanos("2k"));
    assert_eq!(quantity_nanos("500m"), Some(500_000_000));
    assert_eq!(quantity_nanos("1n"), Some(1));
    assert_eq!(quantity_nanos("-1"), None);
    assert_eq!(quantity_nanos("Mi"), None);
    assert_eq!(quantity_nanos("12Q"), None);
}

fn capacity_lines(facts: &[GpuFact]) -> Vec<String> {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|fact| Sourced {
            address: "eks_nodegroup.h100",
            fact,
        })
        .collect();
    Model::build(&sourced)
        .capacity()
        .iter()
        .map(|(_, c)| c.text())
        .filter(|t| t.contains("DRA"))
        .collect()
}

#[test]
fn a_planned_dra_pool_publishes_its_mig_geometry_or_every_partition_under_dynamic_mig() {
    let profile = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'";
    let counted = |count: u32, selector: &str| {
        template(
            "t",
            json!([{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "count": count, "selectors": [{"cel": {"expression": selector}}]}}]),
        )
    };
    // MIG Manager cuts the geometry, the driver publishes its devices.
    let static_mig = vec![
        GpuFact::Cluster(ClusterFact::default()),
        operator_values(json!({"devicePlugin": {"enabled": false}})),
        driver(),
        pool("h100", "H100", &[("nvidia.com/mig.config", "all-1g.10gb")]),
    ];
    assert_eq!(
        capacity_lines(&static_mig),
        [
            "nodepool h100: 2 × p5.48xlarge: gpu.nvidia.com devices (DRA) 0 → 112 (per node 8 × gpu NVIDIA H100 80GB HBM3 (81559 MiB) in MIG all-1g.10gb, each published as 7 × mig 1g.10gb, published by NVIDIA's DRA driver, the device plugin off; devices from the built-in table)"
        ]
    );
    let with = |mut facts: Vec<GpuFact>, claim: GpuFact| {
        facts.push(claim);
        check(&facts)
    };
    assert_eq!(
        with(static_mig.clone(), counted(56, profile)),
        Vec::<String>::new()
    );
    let found = with(static_mig.clone(), counted(57, profile));
    assert!(
        found.len() == 1 && found[0].starts_with("error More devices than any node has"),
        "{found:#?}"
    );
    // What NVML reports of a profile is known once the node publishes it.
    let found = with(
        static_mig,
        counted(
            1,
            "device.capacity['gpu.nvidia.com'].multiprocessors.compareTo(quantity('14')) >= 0",
        ),
    );
    assert!(
        found.len() == 1 && found[0].starts_with("warning Request not checked in full"),
        "{found:#?}"
    );

    // DynamicMIG: each GPU whole and as every partition; which fit together is the node's.
    let dynamic_driver = GpuFact::DraDriver(DraDriverFact {
        source: gpustack_protocol::DraDriverSource::Chart,
        release: "nvidia-dra/dra".into(),
        values: Some(
            json!({"gpuResourcesEnabledOverride": true, "featureGates": {"DynamicMIG": true}}),
        ),
        values_before: None,
        attribute: path(["values"]),
    });
    let dynamic = vec![
        GpuFact::Cluster(ClusterFact::default()),
        dynamic_driver,
        pool("h100", "H100", &[]),
    ];
    let line = &capacity_lines(&dynamic)[0];
    assert!(
        line.contains(
            "each also as every MIG partition it could be cut into (DynamicMIG: 7 × 1g.10gb"
        ),
        "{line}"
    );
    let three = "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'";
    assert_eq!(
        with(dynamic.clone(), counted(1, three)),
        Vec::<String>::new()
    );
    let found = with(dynamic.clone(), counted(2, three));
    assert!(
        found.len() == 1 && found[0].starts_with("warning Request not checked in full"),
        "{found:#?}"
    );
    // Two 3g per GPU at most, sixteen per node.
    let found = with(dynamic, counted(17, three));
    assert!(
        found.len() == 1 && found[0].starts_with("error More devices than any node has"),
        "{found:#?}"
    );
}
