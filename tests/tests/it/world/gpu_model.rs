//! The GPU model against a real control plane: checks that hold however the stack writes its
//! config (a module, a raw ConfigMap, the operator chart's values), MIG profiles checked
//! against the GPU the node reports, the reference flow's first plan, and capacity drift.

use super::e2e::{OPERATOR, Stack, allocatable, chart};
use gpustack_tests::cluster::e2e_cluster;

/// A stack of its own in a copy of the time-slicing example's directory (so that
/// `../../modules` resolves), with `main` as its only configuration.
fn stack_of(main: &str, vars: &[&str]) -> Stack {
    let stack = Stack::example("time-slicing-existing-cluster", vars);
    for file in ["main.hcl", "outputs.hcl", "variables.hcl"] {
        std::fs::remove_file(stack.dir.join(file)).unwrap();
    }
    std::fs::write(
        stack.dir.join("main.hcl"),
        format!(
            "variable \"kubeconfig\" {{\n  type = string\n}}\n\nvariable \"chart\" {{\n  type    = string\n  default = \"gpu-operator\"\n}}\n\nprovider \"kubernetes\" {{\n  config_path = var.kubeconfig\n}}\n\nprovider \"helm\" {{\n  config_path = var.kubeconfig\n}}\n\n{main}"
        ),
    )
    .unwrap();
    stack
}

/// The 1-based line of the first line of `file` that contains `needle`.
fn line_of(file: &std::path::Path, needle: &str) -> usize {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in {}", file.display()))
        + 1
}

/// Destroys what a test applied, also when it fails, so that the next test that installs the
/// operator finds the cluster without one.
struct Destroy<'a>(&'a Stack);

impl Drop for Destroy<'_> {
    fn drop(&mut self) {
        let _ = self.0.run("destroy", &["--auto-approve"]);
    }
}

/// A stack whose only GPU config is a raw ConfigMap `time-slicing-config` with key `any`.
fn raw_config_map_stack(any: &str) -> Stack {
    stack_of(
        &format!(
            r#"resource "kubernetes_manifest" "sharing" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {{
      name      = "time-slicing-config"
      namespace = "gpu-operator"
    }}
    data = {{
      any = {any}
    }}
  }}
}}
"#
        ),
        &[],
    )
}

/// A stack whose only GPU config is the operator chart's own ConfigMap, key `any`, from its
/// values.
fn helm_values_stack(any: &str, chart: &str) -> Stack {
    stack_of(
        &format!(
            r#"resource "helm_release" "gpu_operator" {{
  name             = "gpu-operator"
  namespace        = "gpu-operator"
  create_namespace = true
  chart            = var.chart
  values = {{
    devicePlugin = {{
      config = {{
        create  = true
        name    = "time-slicing-config"
        default = "any"
        data = {{
          any = {any}
        }}
      }}
    }}
  }}
}}
"#
        ),
        &[chart],
    )
}

fn refused(stack: &Stack) -> String {
    let out = stack.run("plan", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "not refused:\n{text}");
    text
}

const SHARING_REPLICAS_1: &str = r#"yamlencode({
        version = "v1"
        sharing = {
          timeSlicing = {
            resources = [
              {
                name     = "nvidia.com/gpu"
                replicas = 1
              },
            ]
          }
        }
      })"#;

#[test]
fn one_invalid_sharing_config_is_refused_as_a_module_a_raw_config_map_and_helm_values() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let chart = format!("chart={}", chart());

    // 1. The sharing module called without its time-slicing wrapper's input checks.
    let module = stack_of(
        r#"module "sharing" {
  source   = "../../modules/device-plugin-sharing"
  strategy = "timeSlicing"
  manager  = "time-slicing"
  operator = {
    namespace               = "gpu-operator"
    cluster_policy_name     = "cluster-policy"
    device_plugin_daemonset = "nvidia-device-plugin-daemonset"
  }
  replicas = 1
}
"#,
        &[],
    );
    let text = refused(&module);
    // No operator on the cluster and none in the stack: the module's ClusterPolicy patch is
    // refused too, in a diagnostic of its own.
    assert!(
        text.contains("A ClusterPolicy patch with no ClusterPolicy"),
        "{text}"
    );
    let sharing = text
        .split('×')
        .find(|d| d.contains("Sharing replicas below 2"))
        .unwrap_or_else(|| panic!("{text}"));
    // At the caller's argument, not at the module's `replicas = var.replicas`.
    let line = line_of(&module.dir.join("main.hcl"), "replicas = 1");
    assert!(
        sharing.contains(&format!("main.hcl:{line}:"))
            && !sharing.contains("device-plugin-sharing/main.hcl:"),
        "not at the module call's replicas line {line}:\n{text}"
    );

    // 2. A raw ConfigMap.
    let raw = raw_config_map_stack(SHARING_REPLICAS_1);
    let text = refused(&raw);
    assert!(text.contains("Sharing replicas below 2"), "{text}");
    let line = line_of(&raw.dir.join("main.hcl"), "replicas = 1");
    assert!(
        text.contains(&format!("main.hcl:{line}:")),
        "not at line {line}:\n{text}"
    );

    // 3. The GPU Operator chart's own ConfigMap, from its values.
    let helm = helm_values_stack(SHARING_REPLICAS_1, &chart);
    let text = refused(&helm);
    assert!(text.contains("Sharing replicas below 2"), "{text}");
    let line = line_of(&helm.dir.join("main.hcl"), "replicas = 1");
    assert!(
        text.contains(&format!("main.hcl:{line}:")),
        "not at line {line}:\n{text}"
    );
    assert!(
        text.contains("helm_release.gpu_operator.values.devicePlugin.config.data.any"),
        "{text}"
    );
}

/// The device plugin's other refusals, each written as a raw ConfigMap and as the chart's
/// values: each refused at the line that causes it.
#[test]
fn the_plugins_other_refusals_are_found_in_a_raw_config_map_and_in_helm_values() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let chart = format!("chart={}", chart());
    // (config as HCL, what is refused, the line it is refused at)
    let cases = [
        (
            r#"{ version = "v1", sharing = { timeSlicing = { resources = [{ name = "nvidia.com/gpu", replicas = 4,
          devices = ["0"] }] } } }"#,
            "Per-resource devices is ignored",
            "devices = [",
        ),
        (
            r#"{ version = "v1", sharing = { mps = { resources = [{ replicas = 2,
          name = "nvidia.com/mig-1g.10gb" }] } } }"#,
            "MPS on a MIG device",
            "name = \"nvidia.com/mig-1g.10gb\"",
        ),
        (
            r#"{ version = "v1", sharing = { timeSlicing = { resources = [{ name = "nvidia.com/gpu", replicas = 4 }] },
          mps = { resources = [{ name = "nvidia.com/gpu", replicas = 4 }] } } }"#,
            "Time-slicing and MPS in one config",
            "mps = {",
        ),
    ];
    for (config, refusal, at) in cases {
        let config = format!("yamlencode({config})");
        let raw = raw_config_map_stack(&config);
        let helm = helm_values_stack(&config, &chart);
        for (way, stack) in [("raw ConfigMap", &raw), ("Helm values", &helm)] {
            let text = refused(stack);
            assert!(text.contains(refusal), "{refusal} as {way}:\n{text}");
            let line = line_of(&stack.dir.join("main.hcl"), at);
            assert!(
                text.contains(&format!("main.hcl:{line}:")),
                "{refusal} as {way} not at line {line}:\n{text}"
            );
        }
    }
}

/// The 1-based line and column of `needle` in `file`.
fn place_of(file: &std::path::Path, needle: &str) -> (usize, usize) {
    let line = line_of(file, needle);
    let text = std::fs::read_to_string(file).unwrap();
    let column = text.lines().nth(line - 1).unwrap().find(needle).unwrap() + 1;
    (line, column)
}

/// Configs written as YAML text rather than HCL: a heredoc, a manifest read with `file()`
/// whose ConfigMap holds the config as a block scalar, and the chart's values in a file.
#[test]
fn a_finding_in_yaml_text_is_located_at_its_line_in_the_heredoc_or_the_file() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let chart = format!("chart={}", chart());

    let heredoc = raw_config_map_stack(
        "<<-EOT\n        version: v1\n        sharing:\n          timeSlicing:\n            resources:\n              - name: nvidia.com/gpu\n                replicas: 1\n      EOT",
    );
    let text = refused(&heredoc);
    assert!(text.contains("Sharing replicas below 2"), "{text}");
    let (line, column) = place_of(&heredoc.dir.join("main.hcl"), "replicas: 1");
    assert!(
        text.contains(&format!("main.hcl:{line}:{column}]")),
        "not at {line}:{column}:\n{text}"
    );

    let manifest = stack_of(
        r#"resource "kubernetes_manifest" "sharing" {
  manifest = yamldecode(file("${path.module}/sharing.yaml"))
}
"#,
        &[],
    );
    let sharing = manifest.dir.join("sharing.yaml");
    std::fs::write(
        &sharing,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config\n  namespace: gpu-operator\ndata:\n  any: |\n    version: v1\n    sharing:\n      mps:\n        resources:\n          - name: nvidia.com/mig-1g.10gb\n            replicas: 2\n",
    )
    .unwrap();
    let text = refused(&manifest);
    assert!(text.contains("MPS on a MIG device"), "{text}");
    let (line, column) = place_of(&sharing, "name: nvidia.com/mig-1g.10gb");
    let squashed: String = text.split_whitespace().collect();
    assert!(
        squashed.contains(&format!("writtenatsharing.yaml:{line}:{column}")),
        "not at sharing.yaml:{line}:{column}:\n{text}"
    );
    let line = line_of(&manifest.dir.join("main.hcl"), "manifest = yamldecode(");
    assert!(text.contains(&format!("main.hcl:{line}:")), "{text}");

    let values = stack_of(
        r#"resource "helm_release" "gpu_operator" {
  name             = "gpu-operator"
  namespace        = "gpu-operator"
  create_namespace = true
  chart            = var.chart
  values           = yamldecode(file("values.yaml"))
}
"#,
        &[&chart],
    );
    let file = values.dir.join("values.yaml");
    std::fs::write(
        &file,
        "devicePlugin:\n  config:\n    create: true\n    name: time-slicing-config\n    default: any\n    data:\n      any: |-\n        version: v1\n        sharing:\n          timeSlicing:\n            resources:\n              - name: nvidia.com/gpu\n                replicas: 4\n                devices: [\"0\"]\n",
    )
    .unwrap();
    let text = refused(&values);
    assert!(text.contains("Per-resource devices is ignored"), "{text}");
    let (line, column) = place_of(&file, "devices:");
    let squashed: String = text.split_whitespace().collect();
    assert!(
        squashed.contains(&format!("writtenatvalues.yaml:{line}:{column}")),
        "not at values.yaml:{line}:{column}:\n{text}"
    );

    // The same values as Terraform's helm provider takes them: YAML documents merged in
    // order, the file's devicePlugin over the one before it.
    let main = values.dir.join("main.hcl");
    let listed = std::fs::read_to_string(&main).unwrap().replace(
        r#"values           = yamldecode(file("values.yaml"))"#,
        r#"values = [
    yamlencode({ devicePlugin = { config = { name = "other", data = { any = "version: v1" } } } }),
    file("values.yaml"),
  ]"#,
    );
    assert!(listed.contains("file(\"values.yaml\"),"), "{listed}");
    std::fs::write(&main, listed).unwrap();
    let text = refused(&values);
    assert!(text.contains("Per-resource devices is ignored"), "{text}");
    let squashed: String = text.split_whitespace().collect();
    assert!(
        squashed.contains(&format!("writtenatvalues.yaml:{line}:{column}")),
        "not at values.yaml:{line}:{column}:\n{text}"
    );
}

#[test]
fn a_mig_profile_the_nodes_gpu_lacks_is_refused_whatever_the_module_was_told() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    // GFD's labels as an H100 node carries them (no operator runs here to set them).
    c.fake_gpu_node("gm-h100", "NVIDIA H100 80GB HBM3", 8);
    c.kubectl_ok(&[
        "label",
        "node",
        "gm-h100",
        "--overwrite",
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count=8",
        "nvidia.com/gpu.memory=81559",
    ]);
    let chart = format!("chart={}", chart());
    let stack = Stack::example("mig-a100", &[&chart, r#"node_names=["gm-h100"]"#]);
    let main = stack.dir.join("main.hcl");
    let text = std::fs::read_to_string(&main)
        .unwrap()
        .replace(r#"gpu_model  = "A100-80GB""#, r#"gpu_model  = "A100-40GB""#);
    std::fs::write(&main, text).unwrap();

    let out = stack.run("plan", &["--var", "geometry=all-1g.5gb"]);
    let message = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains("MIG profile the node's GPU lacks"),
        "{message}"
    );
    let squashed: String = message.split_whitespace().collect();
    assert!(
        squashed.contains("NVIDIA-H100-80GB-HBM3") && squashed.contains("no1g.5gbprofile"),
        "{message}"
    );
    // The module labels the node from its `geometry` input: the finding is at the stack's
    // argument for it.
    let line = line_of(&main, "geometry   = var.geometry");
    assert!(
        message.contains(&format!("main.hcl:{line}:")) && !message.contains("mig/main.hcl:"),
        "not at the module call's geometry line {line}:\n{message}"
    );
    c.kubectl_ok(&["delete", "node", "gm-h100"]);
}

/// The mig module on a cluster without the GPU Operator, and none in the stack: its
/// ClusterPolicy patch can only fail at apply, so the plan refuses it, at the module call.
#[test]
fn a_mig_module_on_a_cluster_without_a_cluster_policy_is_refused_at_plan() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("gm-nopolicy", "NVIDIA A100-SXM4-80GB", 1);
    let stack = stack_of(
        r#"module "mig" {
  source = "../../modules/mig"
  operator = {
    namespace               = "gpu-operator"
    cluster_policy_name     = "cluster-policy"
    device_plugin_daemonset = "nvidia-device-plugin-daemonset"
  }
  gpu_model  = "A100-80GB"
  geometry   = "all-1g.10gb"
  strategy   = "mixed"
  node_names = ["gm-nopolicy"]
}
"#,
        &[],
    );
    let no_policy = c.kubectl(&["get", "clusterpolicy", "cluster-policy"]);
    assert!(
        !no_policy.status.success(),
        "the cluster must have no ClusterPolicy for this test"
    );
    let message = refused(&stack);
    assert!(
        message.contains("A ClusterPolicy patch with no ClusterPolicy"),
        "{message}"
    );
    assert!(
        message.contains("module.mig.kubernetes_patch.cluster_policy"),
        "{message}"
    );
    c.kubectl_ok(&["delete", "node", "gm-nopolicy"]);
}

#[test]
fn the_reference_flows_first_plan_shows_the_nodes_shared_gpus() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    // As tests/cluster/demo makes it: a T4 VM with a driver and no GPU software yet.
    c.fake_gpu_node("gm-demo-t4", "Tesla T4", 1);
    let chart = format!("chart={}", chart());
    let stack = Stack::example(
        "time-slicing-existing-cluster",
        &[&chart, r#"node_names=["gm-demo-t4"]"#],
    );
    let plan = stack.ok("plan", &[]);
    assert!(
        plan.contains(
            "node gm-demo-t4 (1× T4) → nvidia.com/gpu 1 → 10 (time-slicing ×10; joins time-slicing-config key any by label; the GPU Operator is installed by this plan; 1× T4 from instance type Standard_NC4as_T4_v3, built-in table)"
        ),
        "{plan}"
    );
    c.kubectl_ok(&["delete", "node", "gm-demo-t4"]);
}

/// A stack whose only GPU object is the GPU Operator's Helm release: the helm provider reads
/// the cluster's GPU nodes for the model, so the plan has their capacity lines.
#[test]
fn a_stack_with_only_the_operators_helm_release_shows_its_nodes_capacity() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("gm-helm-t4", "Tesla T4", 1);
    let chart = format!("chart={}", chart());
    let config = r#"yamlencode({ version = "v1", sharing = { timeSlicing = { resources = [{ name = "nvidia.com/gpu", replicas = 4 }] } } })"#;
    let stack = helm_values_stack(config, &chart);
    let out = stack.run("plan", &[]);
    let plan = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{plan}{err}");
    assert!(!err.contains("GPU nodes not read"), "{err}");
    assert_eq!(
        super::capacity_lines(&plan, "node gm-helm-t4 "),
        [
            "node gm-helm-t4 (1× T4) → nvidia.com/gpu 1 → 4 (time-slicing ×4; the GPU Operator is installed by this plan; 1× T4 from instance type Standard_NC4as_T4_v3, built-in table)"
        ],
        "{plan}"
    );
    c.kubectl_ok(&["delete", "node", "gm-helm-t4"]);
}

#[test]
fn drift_names_a_node_whose_allocatable_fell_below_the_model_without_a_smoke_test() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("gm-drift", "Tesla T4", 2);
    let chart = format!("chart={}", chart());
    let stack = stack_of(
        r#"module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
}

module "time_slicing" {
  source     = "../../modules/time-slicing"
  operator   = module.gpu_operator
  replicas   = 4
  node_names = ["gm-drift"]
}
"#,
        &[&chart],
    );
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["--auto-approve"]);
    c.eventually(
        60,
        || allocatable(c, "gm-drift", "nvidia.com/gpu"),
        |a| a == "8",
    );
    // The operator just installed: the device plugin's pods come up node by node, and a node
    // without one advertises nothing until then.
    c.eventually(
        60,
        || {
            let clean = stack.run("drift", &[]);
            (
                clean.status.code(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&clean.stdout),
                    String::from_utf8_lossy(&clean.stderr)
                ),
            )
        },
        |(code, _)| *code == Some(0),
    );

    // One GPU falls off the bus: the device plugin takes it out of allocatable.
    c.kubectl_ok(&[
        "annotate",
        "node",
        "gm-drift",
        "--overwrite",
        "gpustack.dev/gpu-unhealthy=1",
    ]);
    c.eventually(
        60,
        || allocatable(c, "gm-drift", "nvidia.com/gpu"),
        |a| a == "4",
    );
    let drift = stack.run("drift", &[]);
    let text = String::from_utf8_lossy(&drift.stdout);
    assert_eq!(drift.status.code(), Some(2), "{text}");
    assert!(
        text.contains("node gm-drift advertises nvidia.com/gpu 4, the GPU model expects 8 (time-slicing ×4; 2× Tesla-T4 from GFD labels)"),
        "{text}"
    );
    let json = stack.run("drift", &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["drifted"], true, "{report}");
    assert_eq!(
        report["gpu_capacity_drift"][0]["node"], "gm-drift",
        "{report}"
    );
    let markdown = stack.run("drift", &["--markdown"]);
    let markdown = String::from_utf8_lossy(&markdown.stdout);
    assert!(
        markdown.contains("| `gm-drift` | `nvidia.com/gpu` | 4 | 8 |"),
        "{markdown}"
    );
    let metrics = stack.dir.join("drift.prom");
    let with_metrics = stack.run("drift", &["--metrics-file", metrics.to_str().unwrap()]);
    assert_eq!(with_metrics.status.code(), Some(2));
    let metrics = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        metrics.contains("node=\"gm-drift\",resource=\"nvidia.com/gpu\"} 4"),
        "{metrics}"
    );

    // With the operator and the config live, only node labels change: gm-join enters the
    // config and gm-drift leaves it for the unshared default.
    c.fake_gpu_node("gm-join", "Tesla T4", 1);
    // Its device plugin's pod comes up first: until then the node advertises nothing.
    c.eventually(
        60,
        || allocatable(c, "gm-join", "nvidia.com/gpu"),
        |a| a == "1",
    );
    let main = stack.dir.join("main.hcl");
    let text = std::fs::read_to_string(&main).unwrap().replace(
        r#"node_names = ["gm-drift"]"#,
        r#"node_names = ["gm-join"]"#,
    );
    std::fs::write(&main, text).unwrap();
    let plan = stack.ok("plan", &[]);
    super::assert_capacity_snapshot("label-only-join-and-leave", &plan, "node gm-");

    drop(_destroy);
    c.kubectl_ok(&["delete", "node", "gm-drift", "gm-join"]);
}

/// A node that NVIDIA's DRA driver serves, as the API server stores its ResourceSlice: drift
/// names it when the slice lists fewer GPUs than the node's GFD labels count, smoke test or
/// device plugin or not.
#[test]
fn drift_names_a_dra_node_whose_resource_slice_lost_a_gpu() {
    let c = e2e_cluster();
    c.fake_gpu_node("gm-dra", "NVIDIA H100 80GB HBM3", 2);
    c.kubectl_ok(&[
        "label",
        "node",
        "gm-dra",
        "--overwrite",
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count=2",
        "nvidia.com/gpu.memory=81559",
        "nvidia.com/gpu.deploy.device-plugin=false",
    ]);
    let slice = |gpus: usize| {
        let devices: String = (0..gpus)
            .map(|i| {
                format!(
                    "  - name: gpu-{i}\n    attributes:\n      type:\n        string: gpu\n      productName:\n        string: NVIDIA H100 80GB HBM3\n    capacity:\n      memory:\n        value: 81559Mi\n"
                )
            })
            .collect();
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: gm-dra-gpu.nvidia.com\nspec:\n  driver: gpu.nvidia.com\n  nodeName: gm-dra\n  pool:\n    name: gm-dra\n    generation: {gpus}\n    resourceSliceCount: 1\n  devices:\n{devices}"
        )
    };
    c.apply_yaml(&slice(2));
    let stack = stack_of(
        r#"resource "kubernetes_manifest" "sharing" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "gm-dra-sharing"
      namespace = "default"
    }
    data = {
      any = yamlencode({ version = "v1", sharing = { timeSlicing = { resources = [{ name = "nvidia.com/gpu", replicas = 4 }] } } })
    }
  }
}
"#,
        &[],
    );
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["--auto-approve"]);
    let clean = stack.run("drift", &[]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );

    // The driver republishes the node's pool without one GPU.
    c.apply_yaml(&slice(1));
    let drift = stack.run("drift", &[]);
    let text = String::from_utf8_lossy(&drift.stdout);
    assert_eq!(drift.status.code(), Some(2), "{text}");
    assert!(
        text.contains("node gm-dra advertises gpu.nvidia.com devices (DRA) 1, the GPU model expects 2 (full GPUs in the node's ResourceSlices; 2× NVIDIA-H100-80GB-HBM3 from GFD labels)"),
        "{text}"
    );

    c.kubectl_ok(&["delete", "resourceslice", "gm-dra-gpu.nvidia.com"]);
    drop(_destroy);
    c.kubectl_ok(&["delete", "node", "gm-dra"]);
}

/// The lines of a plan's GPU disruption section about node `node`.
fn disruption_lines<'a>(plan: &'a str, node: &str) -> Vec<&'a str> {
    let prefix = format!("node {node}:");
    plan.lines()
        .skip_while(|l| !l.trim().starts_with("GPU disruption"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .filter(|l| l.starts_with(&prefix))
        .collect()
}

/// A MIG geometry change on a pool of three nodes running GPU pods: the plan shows, before
/// anything is applied, the capacity each node will advertise and a disruption section that
/// names each node, the GPU pods running there (read live) and how the change rolls out.
#[test]
fn a_mig_change_on_three_busy_nodes_lists_each_node_and_its_gpu_pods_as_a_disruption() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["gm-dis-0", "gm-dis-1", "gm-dis-2"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let chart = format!("chart={}", chart());
    let stack = stack_of(
        r#"variable "geometry" {
  type    = string
  default = "all-disabled"
}

module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
  mig_strategy    = "mixed"
}

module "mig" {
  source     = "../../modules/mig"
  operator   = module.gpu_operator
  gpu_model  = "A100-80GB"
  geometry   = var.geometry
  strategy   = "mixed"
  node_names = ["gm-dis-0", "gm-dis-1", "gm-dis-2"]
}
"#,
        &[&chart],
    );
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["--auto-approve"]);
    for (i, node) in nodes.iter().enumerate() {
        c.eventually(60, || allocatable(c, node, "nvidia.com/gpu"), |a| a == "1");
        // A training job's pod on the node's one GPU (two on the first node: one of them
        // holds no GPU and must not be listed).
        c.apply_yaml(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-{i}\n  namespace: default\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: train\n    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
        ));
    }
    c.apply_yaml(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sidecar-0\n  namespace: default\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: gm-dis-0\n  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: log\n    image: busybox\n",
    );
    for pod in ["train-0", "train-1", "train-2", "sidecar-0"] {
        c.eventually(60, || c.pod_phase(pod), |phase| phase == "Running");
    }

    let plan = stack.ok("plan", &["--var", "geometry=all-1g.10gb"]);
    for (i, node) in nodes.iter().enumerate() {
        let capacity = super::capacity_lines(&plan, &format!("node {node} "));
        assert!(
            capacity
                .iter()
                .any(|l| l.contains("nvidia.com/mig-1g.10gb 0 → 7")),
            "{plan}"
        );
        let disruption = disruption_lines(&plan, node);
        assert_eq!(
            disruption,
            [format!(
                "node {node}: reconfigures MIG all-disabled → all-1g.10gb (MIG Manager stops every GPU operand of the node and needs its GPUs free; MIG mode changes: the node reboots where MIG Manager runs with WITH_REBOOT); GPU pods running: default/train-{i}; rollout: node by node by mig-geometry (at most 1 of 3 at once): cordons the node, waits up to 30m for its GPU pods to finish, waits for MIG Manager's success, checks what it advertises, uncordons"
            )],
            "{plan}"
        );
    }
    for pod in ["train-0", "train-1", "train-2", "sidecar-0"] {
        c.kubectl_ok(&["delete", "pod", pod, "-n", "default", "--wait=false"]);
    }
    stack.ok("destroy", &["--auto-approve"]);
    drop(_destroy);
    for node in nodes {
        c.kubectl_ok(&["delete", "node", node]);
    }
}

/// gpu-operator#2833 on a node: MIG Manager reports success but leaves the device plugin
/// paused, so the node advertises none of its MIG devices. `gpustack drift` reports the node
/// with the wedge as the cause.
#[test]
fn drift_reports_a_node_mig_manager_left_wedged_with_the_cause() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let node = "gm-wedge";
    c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    c.kubectl_ok(&[
        "annotate",
        "node",
        node,
        "--overwrite",
        "gpusim.gpustack.dev/wedge=paused-left",
    ]);
    let chart = format!("chart={}", chart());
    let stack = stack_of(
        r#"module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
  mig_strategy    = "mixed"
}

module "mig" {
  source     = "../../modules/mig"
  operator   = module.gpu_operator
  gpu_model  = "A100-80GB"
  geometry   = "all-1g.10gb"
  strategy   = "mixed"
  node_names = ["gm-wedge"]
  rollout    = { settle_timeout = "5s" }
}
"#,
        &[&chart],
    );
    let _destroy = Destroy(&stack);
    // The rollout sees the wedge first: it stops with the node cordoned and says why.
    let out = stack.run("apply", &["--auto-approve"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let squashed: String = said.split_whitespace().collect();
    assert!(
        squashed.contains("Rolloutmig-geometrystoppedatnodegm-wedge")
            && squashed
                .contains("paused-for-mig-changeisleftonthenodeafterMIGManagerreportedsuccess"),
        "{said}"
    );
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |a| a == "0",
    );
    let drift = stack.run("drift", &[]);
    let text = String::from_utf8_lossy(&drift.stdout);
    assert_eq!(drift.status.code(), Some(2), "{text}");
    let squashed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        squashed.contains("node gm-wedge advertises nvidia.com/mig-1g.10gb 0, the GPU model expects 7")
            && squashed.contains("wedged: MIG Manager left nvidia.com/gpu.deploy.dcgm-exporter, nvidia.com/gpu.deploy.device-plugin, nvidia.com/gpu.deploy.gpu-feature-discovery at paused-for-mig-change after state success"),
        "{text}"
    );
    // The wedge cleared as the cause says, the node is whole again, and nothing holds the
    // operator's teardown up.
    c.kubectl_ok(&["annotate", "node", node, "gpusim.gpustack.dev/wedge-"]);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/gpu.deploy.device-plugin=true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery=true",
        "nvidia.com/gpu.deploy.dcgm-exporter=true",
    ]);
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |a| a == "7",
    );
    drop(_destroy);
    c.kubectl_ok(&["delete", "node", node]);
}

/// A sharing change (time-slicing 10 → 4) restarts the device plugin on the node that uses
/// the config: the plan lists it, with the GPU pod running there, before apply.
#[test]
fn a_sharing_change_lists_the_device_plugin_restart_and_its_gpu_pods_before_apply() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let node = "gm-dis-ts";
    c.fake_gpu_node(node, "Tesla T4", 1);
    let chart = format!("chart={}", chart());
    let stack = stack_of(
        r#"variable "replicas" {
  type    = number
  default = 10
}

module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
}

module "time_slicing" {
  source     = "../../modules/time-slicing"
  operator   = module.gpu_operator
  replicas   = var.replicas
  node_names = ["gm-dis-ts"]
}
"#,
        &[&chart],
    );
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["--auto-approve"]);
    c.eventually(60, || allocatable(c, node, "nvidia.com/gpu"), |a| a == "10");
    c.apply_yaml(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: infer-ts\n  namespace: default\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: infer\n    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    ));
    c.eventually(60, || c.pod_phase("infer-ts"), |phase| phase == "Running");
    let plan = stack.ok("plan", &["--var", "replicas=4"]);
    let lines = disruption_lines(&plan, node);
    assert_eq!(lines.len(), 1, "{plan}");
    assert!(
        lines[0].starts_with(&format!(
            "node {node}: restarts the device plugin (time-slicing ×10"
        )) && lines[0].contains("time-slicing ×4")
            && lines[0].contains("GPU pods running: default/infer-ts"),
        "{plan}"
    );
    // The same change as a Terraform plan, reviewed against the live cluster, shows the same
    // node, change and pods (its rollout is Terraform's: none of gpustack's).
    let reviewed = review_of_the_same_change(c, 4);
    let review_lines = disruption_lines(&reviewed, node);
    assert_eq!(review_lines.len(), 1, "{reviewed}");
    assert_eq!(
        review_lines[0].split("; rollout:").next(),
        lines[0].split("; rollout:").next(),
        "{reviewed}"
    );
    c.kubectl_ok(&["delete", "pod", "infer-ts", "-n", "default", "--wait=false"]);
    stack.ok("destroy", &["--auto-approve"]);
    drop(_destroy);
    c.kubectl_ok(&["delete", "node", node]);
}

/// `gpustack review --kubeconfig` of a Terraform plan (format 1.2, as `terraform show -json`
/// writes it) whose one change sets the live time-slicing config's replicas to `replicas`:
/// the ConfigMap the live ClusterPolicy names, as a `kubernetes_config_map_v1` update.
fn review_of_the_same_change(c: &gpustack_tests::cluster::TestCluster, replicas: u32) -> String {
    let config: serde_json::Value = serde_json::from_str(&c.kubectl_ok(&[
        "get",
        "clusterpolicy",
        "-o",
        "jsonpath={.items[0].spec.devicePlugin.config}",
    ]))
    .unwrap();
    let name = config["name"].as_str().unwrap();
    // The ConfigMap lives in the operator's namespace: found by name.
    let found: serde_json::Value = serde_json::from_str(&c.kubectl_ok(&[
        "get",
        "configmap",
        "-A",
        "--field-selector",
        &format!("metadata.name={name}"),
        "-o",
        "json",
    ]))
    .unwrap();
    let live = found["items"][0].clone();
    let namespace = live["metadata"]["namespace"]
        .as_str()
        .unwrap_or_else(|| panic!("no ConfigMap {name}: {found}"))
        .to_owned();
    let data = live["data"].clone();
    let mut changed = data.clone();
    for text in changed.as_object_mut().unwrap().values_mut() {
        let replaced = regex_free_replicas(text.as_str().unwrap(), replicas);
        *text = serde_json::Value::String(replaced);
    }
    let metadata = serde_json::json!([{"name": name, "namespace": namespace}]);
    // The operator's release, unchanged, as a Terraform stack that installs it has it: it
    // names the namespace the operator reads its ConfigMaps from.
    let mut values = format!("devicePlugin:\n  config:\n    name: {name}\n");
    if let Some(default) = config["default"].as_str() {
        values.push_str(&format!("    default: {default}\n"));
    }
    let release = serde_json::json!({
        "name": "gpu-operator", "namespace": namespace, "chart": "gpu-operator",
        "set": [], "set_list": [], "values": [values]
    });
    let plan = serde_json::json!({
        "format_version": "1.2",
        "terraform_version": "1.9.8",
        "resource_changes": [{
            "address": "kubernetes_config_map_v1.time_slicing",
            "mode": "managed",
            "type": "kubernetes_config_map_v1",
            "name": "time_slicing",
            "provider_name": "registry.terraform.io/hashicorp/kubernetes",
            "change": {
                "actions": ["update"],
                "before": {"data": data, "metadata": metadata, "id": format!("{namespace}/{name}")},
                "after": {"data": changed, "metadata": metadata, "id": format!("{namespace}/{name}")},
                "after_unknown": {"data": {}, "metadata": [{}]},
                "before_sensitive": {"data": {}, "metadata": [{}]},
                "after_sensitive": {"data": {}, "metadata": [{}]}
            }
        }, {
            "address": "helm_release.gpu_operator",
            "mode": "managed",
            "type": "helm_release",
            "name": "gpu_operator",
            "provider_name": "registry.terraform.io/hashicorp/helm",
            "change": {
                "actions": ["no-op"],
                "before": release,
                "after": release,
                "after_unknown": {},
                "before_sensitive": {},
                "after_sensitive": {}
            }
        }]
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let kubeconfig = c.kubeconfig.to_string_lossy().into_owned();
    let output = gpustack_tests::gpustack(
        dir.path(),
        &["review", "plan.json", "--kubeconfig", &kubeconfig],
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// A device-plugin config with every `replicas: N` (quoted or not) set to `replicas`.
fn regex_free_replicas(text: &str, replicas: u32) -> String {
    text.lines()
        .map(|line| {
            // `replicas: 10` or, as yamlencode writes it, `"replicas": 10`.
            let colon = line
                .find("replicas")
                .and_then(|at| line[at..].find(':').map(|c| at + c));
            match colon {
                Some(colon) => format!("{} {replicas}", &line[..=colon]),
                None => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
