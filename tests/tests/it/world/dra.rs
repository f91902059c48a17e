//! Dynamic Resource Allocation against the real kube-scheduler: NVIDIA's DRA driver chart
//! installed by gpustack, the simulator playing its kubelet plugin (the nodes' ResourceSlices),
//! and gpustack's plan-time verdict on each claim compared with what the scheduler does with
//! the same claim: allocated, or left Pending.

use super::e2e::{DestroyOnDrop, OPERATOR, Stack, output};
use super::testworld::DRA_BESIDE;
use gpustack_tests::cluster::{TestCluster, cluster};

const NAMESPACE: &str = "dra-agree";
/// The nodes of these tests carry it; the driver's kubelet plugin and the pods select it.
const NODE_LABEL: &str = "gpustack.dev/dra-agree";

fn driver_chart() -> String {
    gpustack_tests::upstream("charts/dra-driver-nvidia-gpu")
        .canonicalize()
        .expect("the DRA driver chart in the upstream data")
        .display()
        .to_string()
}

/// A fake GPU node that only NVIDIA's DRA driver serves (the operator's device plugin is
/// switched off on it), with MIG `geometry` applied to its GPUs when given.
fn dra_node(c: &TestCluster, name: &str, model: &str, count: u32, geometry: Option<&str>) {
    c.fake_gpu_node_labelled(
        name,
        model,
        count,
        &[
            &format!("{NODE_LABEL}=true"),
            "nvidia.com/gpu.deploy.device-plugin=false",
        ],
    );
    if let Some(geometry) = geometry {
        c.kubectl_ok(&[
            "annotate",
            "node",
            name,
            "--overwrite",
            &format!("gpusim.gpustack.dev/mig-applied={geometry}"),
        ]);
    }
}

/// Deletes the tests' DRA nodes when dropped, so that a failed test leaves none to the next
/// (every live node's devices count in a plan), and makes the claims' namespace afresh.
struct Fresh<'a>(&'a TestCluster);

impl<'a> Fresh<'a> {
    fn start(c: &'a TestCluster) -> Self {
        let fresh = Fresh(c);
        fresh.clean();
        c.kubectl_ok(&["create", "namespace", NAMESPACE]);
        fresh
    }

    fn clean(&self) {
        let _ = self.0.kubectl(&["delete", "node", "-l", NODE_LABEL]);
        let _ = self.0.kubectl(&[
            "delete",
            "namespace",
            NAMESPACE,
            "--ignore-not-found",
            "--wait=true",
        ]);
    }
}

impl Drop for Fresh<'_> {
    fn drop(&mut self) {
        self.clean();
    }
}

/// A command's output with diagnostics unwrapped: words one space apart, a word the terminal
/// width broke at its hyphen joined again.
fn unwrapped(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().map(str::trim) {
        if !(out.is_empty() || out.ends_with('-')) {
            out.push(' ');
        }
        out.push_str(line);
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The output of a plan that must fail, unwrapped.
fn refused_plan(stack: &Stack) -> String {
    let out = stack.run("plan", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    unwrapped(&text)
}

const PROVIDERS: &str = r#"variable "kubeconfig" {
  type = string
}

variable "chart" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

provider "helm" {
  config_path = var.kubeconfig
}
"#;

/// The driver's release for the agreement tables, with `feature_gates` (HCL map body).
fn driver_release(feature_gates: &str) -> String {
    format!(
        r#"resource "helm_release" "dra" {{
  name             = "dra-agree"
  namespace        = "nvidia-dra-agree"
  create_namespace = true
  chart            = var.chart
  values = {{
    gpuResourcesEnabledOverride = true
    featureGates = {{ {feature_gates} }}
    resources = {{
      computeDomains = {{
        enabled = false
      }}
    }}
    kubeletPlugin = {{
      nodeSelector = {{
        "{NODE_LABEL}" = "true"
      }}
    }}
  }}
}}
"#
    )
}

/// One case of the table: the claim's `spec` (YAML), and what the scheduler does with it.
struct Case {
    name: &'static str,
    spec: String,
    allocated: bool,
}

fn exactly(class: &str, selector: &str, extra: &str) -> String {
    let selectors = if selector.is_empty() {
        String::new()
    } else {
        format!(
            "\n      selectors:\n      - cel:\n          expression: {}",
            serde_json::to_string(selector).unwrap()
        )
    };
    format!(
        "devices:\n  requests:\n  - name: gpu\n    exactly:\n      deviceClassName: {class}{selectors}{extra}\n"
    )
}

fn gpu(selector: &str, allocated: bool, name: &'static str) -> Case {
    Case {
        name,
        spec: exactly("gpu.nvidia.com", selector, ""),
        allocated,
    }
}

fn mig(selector: &str, allocated: bool, name: &'static str) -> Case {
    Case {
        name,
        spec: exactly("mig.nvidia.com", selector, ""),
        allocated,
    }
}

/// The table: two nodes of two A100-SXM4-80GB and one A100 with MIG all-balanced (3g.40gb,
/// 2g.20gb, 2 × 1g.10gb).
fn cases() -> Vec<Case> {
    let attr = |name: &str| format!("device.attributes['gpu.nvidia.com'].{name}");
    let memory = "device.capacity['gpu.nvidia.com'].memory";
    let sms = "device.capacity['gpu.nvidia.com'].multiprocessors";
    let a100 = format!("{} == 'NVIDIA A100-SXM4-80GB'", attr("productName"));
    let h100 = format!("{} == 'NVIDIA H100 80GB HBM3'", attr("productName"));
    vec![
        gpu(&a100, true, "product-a100"),
        gpu(&h100, false, "product-h100"),
        gpu(&format!("{}.startsWith('NVIDIA A100')", attr("productName")), true, "product-prefix"),
        gpu(&format!("{}.lowerAscii().matches('^.*a100.*$')", attr("productName")), true, "product-regex"),
        gpu(&format!("{} == 'Ampere'", attr("architecture")), true, "arch-ampere"),
        gpu(&format!("{} == 'Hopper'", attr("architecture")), false, "arch-hopper"),
        gpu(&format!("{memory}.compareTo(quantity('81920Mi')) == 0"), true, "memory-exact"),
        gpu(&format!("{memory}.isGreaterThan(quantity('80Gi'))"), false, "memory-over-80gi"),
        gpu(&format!("{memory}.isGreaterThan(quantity('40Gi'))"), true, "memory-over-40gi"),
        gpu(&format!("{}.isGreaterThan(semver('8.0.0'))", attr("cudaComputeCapability")), false, "cc-over-8"),
        gpu(&format!("{}.compareTo(semver('8.0.0')) >= 0", attr("cudaComputeCapability")), true, "cc-at-least-8"),
        gpu(&format!("{}.isGreaterThan(semver('570.0.0'))", attr("driverVersion")), true, "driver-over-570"),
        gpu(&format!("{}.isLessThan(semver('550.0.0'))", attr("driverVersion")), false, "driver-under-550"),
        gpu(&format!("{} == 'Nvidia'", attr("brand")), true, "brand"),
        gpu("device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:')", true, "pci-bus"),
        gpu("!has(device.attributes['example.com'].model)", true, "other-domain"),
        gpu(&format!("has({})", attr("profile")), false, "has-profile"),
        // `profile` is missing on every full GPU: a runtime error the scheduler stops at.
        gpu(&format!("{} == '1g.10gb'", attr("profile")), false, "profile-on-gpu"),
        mig(&format!("{} == '1g.10gb'", attr("profile")), true, "mig-1g"),
        mig(&format!("{} == '7g.80gb'", attr("profile")), false, "mig-7g"),
        mig(&format!("{sms}.isGreaterThan(quantity('40'))"), true, "mig-sms-over-40"),
        mig(&format!("{sms}.isGreaterThan(quantity('50'))"), false, "mig-sms-over-50"),
        mig(&format!("{}.startsWith('GPU-')", attr("parentUUID")), true, "mig-parent"),
        Case {
            name: "count-2",
            spec: exactly("gpu.nvidia.com", &a100, "\n      count: 2"),
            allocated: true,
        },
        Case {
            name: "count-3",
            spec: exactly("gpu.nvidia.com", &a100, "\n      count: 3"),
            allocated: false,
        },
        Case {
            name: "all",
            spec: exactly("mig.nvidia.com", "", "\n      allocationMode: All"),
            allocated: true,
        },
        Case {
            name: "first-available",
            spec: format!(
                "devices:\n  requests:\n  - name: gpu\n    firstAvailable:\n    - name: h100\n      deviceClassName: gpu.nvidia.com\n      selectors:\n      - cel:\n          expression: {}\n    - name: two\n      deviceClassName: gpu.nvidia.com\n      count: 2\n",
                serde_json::to_string(&h100).unwrap()
            ),
            allocated: true,
        },
        Case {
            name: "first-available-none",
            spec: format!(
                "devices:\n  requests:\n  - name: gpu\n    firstAvailable:\n    - name: h100\n      deviceClassName: gpu.nvidia.com\n      selectors:\n      - cel:\n          expression: {}\n    - name: three\n      deviceClassName: gpu.nvidia.com\n      count: 3\n",
                serde_json::to_string(&h100).unwrap()
            ),
            allocated: false,
        },
        Case {
            // A full GPU and a MIG device: no node has both.
            name: "gpu-and-mig",
            spec: "devices:\n  requests:\n  - name: gpu\n    exactly:\n      deviceClassName: gpu.nvidia.com\n  - name: mig\n    exactly:\n      deviceClassName: mig.nvidia.com\n".into(),
            allocated: false,
        },
        Case {
            // The API server has no `>=` for quantities: the claim is refused at create.
            name: "refused-at-create",
            spec: exactly("gpu.nvidia.com", &format!("{memory} >= quantity('40Gi')"), ""),
            allocated: false,
        },
        Case {
            // Two MIG devices of one GPU: the MIG node's 3g and one of its 1g.
            name: "match-parent",
            spec: format!(
                "devices:\n  requests:\n  - name: big\n    exactly:\n      deviceClassName: mig.nvidia.com\n      selectors:\n      - cel:\n          expression: {}\n  - name: small\n    exactly:\n      deviceClassName: mig.nvidia.com\n      selectors:\n      - cel:\n          expression: {}\n  constraints:\n  - requests: [big, small]\n    matchAttribute: gpu.nvidia.com/parentUUID\n",
                serde_json::to_string(&format!("{} == '3g.40gb'", attr("profile"))).unwrap(),
                serde_json::to_string(&format!("{} == '1g.10gb'", attr("profile"))).unwrap()
            ),
            allocated: true,
        },
        Case {
            // Two GPUs never share a PCI bus.
            name: "match-pci-bus",
            spec: exactly("gpu.nvidia.com", "", "\n      count: 2")
                + "  constraints:\n  - matchAttribute: resource.kubernetes.io/pciBusID\n",
            allocated: false,
        },
        Case {
            name: "match-product",
            spec: exactly("gpu.nvidia.com", "", "\n      count: 2")
                + "  constraints:\n  - matchAttribute: gpu.nvidia.com/productName\n",
            allocated: true,
        },
        Case {
            name: "two-gpus-two-requests",
            spec: "devices:\n  requests:\n  - name: a\n    exactly:\n      deviceClassName: gpu.nvidia.com\n  - name: b\n    exactly:\n      deviceClassName: gpu.nvidia.com\n".into(),
            allocated: true,
        },
    ]
}

/// The spec as HCL (through yamldecode, as a stack would embed it).
fn template_resource(case: &Case) -> String {
    let resource = case.name.replace('-', "_");
    format!(
        "resource \"kubernetes_manifest\" \"{resource}\" {{\n  manifest = {{\n    apiVersion = \"resource.k8s.io/v1\"\n    kind       = \"ResourceClaimTemplate\"\n    metadata = {{\n      name      = \"{name}\"\n      namespace = \"{NAMESPACE}\"\n    }}\n    spec = {{\n      spec = yamldecode(<<-EOT\n{spec}EOT\n      )\n    }}\n  }}\n}}\n",
        name = case.name,
        spec = case
            .spec
            .lines()
            .map(|l| format!("        {l}\n"))
            .collect::<String>()
    )
}

/// What the real scheduler does with the claim: allocated (`Ok(true)`), left Pending
/// (`Ok(false)`), or refused by the API server at create (`Err`).
fn scheduler_verdict(c: &TestCluster, case: &Case) -> Result<bool, String> {
    let spec: String = case.spec.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\nspec:\n{spec}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\nspec:\n  nodeSelector:\n    {NODE_LABEL}: \"true\"\n  resourceClaims:\n  - name: gpu\n    resourceClaimName: {name}\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      claims:\n      - name: gpu\n",
        name = case.name
    );
    let mut apply = c.kubectl_command();
    apply.args(["apply", "-f", "-"]);
    let out = {
        use std::io::Write;
        let mut child = apply
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(yaml.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let verdict = c.eventually(
        60,
        || {
            let allocated = c.kubectl_ok(&[
                "get",
                "resourceclaim",
                "-n",
                NAMESPACE,
                case.name,
                "-o",
                "jsonpath={.status.allocation.devices.results[*].device}",
            ]);
            let unschedulable = c.kubectl_ok(&[
                "get",
                "pod",
                "-n",
                NAMESPACE,
                case.name,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].status}",
            ]);
            (allocated, unschedulable)
        },
        |(allocated, unschedulable)| !allocated.is_empty() || unschedulable == "False",
    );
    let _ = c.kubectl(&[
        "delete",
        "pod,resourceclaim",
        "-n",
        NAMESPACE,
        case.name,
        "--grace-period=0",
        "--force",
        "--wait",
    ]);
    Ok(!verdict.0.is_empty())
}

/// gpustack's verdict per case from a plan's diagnostics: the cases with an error located in
/// their file.
fn refused_cases(plan: &str, cases: &[Case]) -> Vec<&'static str> {
    // Each diagnostic starts at a line `Error: …` or `Warning: …`; its location names the file.
    let mut refused = Vec::new();
    let mut severity = "";
    for line in plan.lines() {
        let trimmed = line.trim_start_matches([' ', '×', '⚠', '│', '╭', '─', '[']);
        if line.contains("Error:") || line.trim_start().starts_with('×') {
            severity = "error";
        } else if line.contains("Warning:") || line.trim_start().starts_with('⚠') {
            severity = "warning";
        }
        for case in cases {
            if severity == "error"
                && trimmed.starts_with(&format!("{}.hcl:", case.name))
                && !refused.contains(&case.name)
            {
                refused.push(case.name);
            }
        }
    }
    refused
}

/// The stack's plan with a template of each case in its own file.
fn plan_with(stack: &Stack, cases: &[&Case]) -> String {
    for case in cases {
        std::fs::write(
            stack.dir.join(format!("{}.hcl", case.name)),
            template_resource(case),
        )
        .unwrap();
    }
    let plan = stack.run("plan", &[]);
    for case in cases {
        std::fs::remove_file(stack.dir.join(format!("{}.hcl", case.name))).unwrap();
    }
    format!(
        "{}{}",
        String::from_utf8_lossy(&plan.stdout),
        String::from_utf8_lossy(&plan.stderr)
    )
}

/// The cases on which gpustack's plan, the real scheduler and the table do not all agree
/// (the case `refused-at-create` must be refused by the API server), and the plan's text.
fn compare(c: &TestCluster, stack: &Stack, cases: &[Case]) -> (Vec<String>, String) {
    // The claims in one plan, but the one the API server refuses: its own plan.
    let table: Vec<&Case> = cases
        .iter()
        .filter(|c| c.name != "refused-at-create")
        .collect();
    let text = plan_with(stack, &table);
    let refused = refused_cases(&text, cases);
    let mut disagreements = Vec::new();
    for case in cases {
        let scheduler = scheduler_verdict(c, case);
        let gpustack_allocates = !refused.contains(&case.name);
        if case.name == "refused-at-create" {
            assert!(scheduler.is_err(), "{scheduler:?}");
            continue;
        }
        // Only the case written to be refused at create may be.
        let scheduler_allocates = scheduler.as_ref().is_ok_and(|a| *a);
        if scheduler.is_err()
            || scheduler_allocates != gpustack_allocates
            || case.allocated != gpustack_allocates
        {
            disagreements.push(format!(
                "{}: scheduler {scheduler:?}, gpustack {}, table {}",
                case.name,
                if gpustack_allocates {
                    "plans"
                } else {
                    "refuses"
                },
                case.allocated
            ));
        }
    }
    (disagreements, text)
}

#[test]
fn gpustack_agrees_with_the_scheduler_on_a_table_of_claims() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let _beside = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let _fresh = Fresh::start(c);
    for name in ["dra-a100-a", "dra-a100-b"] {
        dra_node(c, name, "NVIDIA A100-SXM4-80GB", 2, None);
    }
    dra_node(
        c,
        "dra-a100-mig",
        "NVIDIA A100-SXM4-80GB",
        1,
        Some("all-balanced"),
    );

    let stack = Stack::inline(&format!("{PROVIDERS}\n{}", driver_release("")))
        .on(c)
        .with_vars(&[&format!("chart={}", driver_chart())]);
    let _destroy = DestroyOnDrop(&stack);
    stack.ok("apply", &["--auto-approve"]);
    // The kubelet plugin runs on the three nodes and publishes their devices.
    c.eventually(
        60,
        || {
            c.kubectl_ok(&[
                "get",
                "resourceslices",
                "-o",
                "jsonpath={range .items[*]}{.spec.nodeName}={.spec.devices[*].name}{\"\\n\"}{end}",
            ])
        },
        |slices| {
            slices.contains("dra-a100-a=gpu-0 gpu-1")
                && slices.contains("dra-a100-b=gpu-0 gpu-1")
                && slices.contains("dra-a100-mig=gpu-0-mig-3g40gb-9-4")
        },
    );

    let cases = cases();
    assert_eq!(cases.len(), 34, "the README names the table's size");
    let (disagreements, text) = compare(c, &stack, &cases);
    assert!(disagreements.is_empty(), "{disagreements:#?}\n{text}");
    // A selector the API server refuses at create is refused at plan, at the selector.
    let refused: Vec<&Case> = cases
        .iter()
        .filter(|c| c.name == "refused-at-create")
        .collect();
    let text = plan_with(&stack, &refused);
    assert!(
        text.contains("refused-at-create.hcl")
            && text.contains("found no matching overload for '_>=_'")
            && text.contains("selectors[0].cel.expression"),
        "{text}"
    );
    // A chart of the stack's own whose templates write a claim: checked as a manifest is.
    let chart = stack.dir.join("claims-chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: claims\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/claim.yaml"),
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: h100\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n          selectors:\n          - cel:\n              expression: {}\n",
            serde_json::to_string("device.attributes['gpu.nvidia.com'].productName == '{{ .Values.product }}'").unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        stack.dir.join("chart.hcl"),
        format!(
            "resource \"helm_release\" \"claims\" {{\n  name      = \"claims\"\n  namespace = \"{NAMESPACE}\"\n  chart     = \"{}\"\n  values = {{\n    product = \"NVIDIA H100 80GB HBM3\"\n  }}\n}}\n",
            chart.display()
        ),
    )
    .unwrap();
    let text = refused_plan(&stack);
    assert!(
        text.contains("chart.hcl")
            && text.contains("Selector matches no device")
            && text.contains("ResourceClaimTemplate dra-agree/h100")
            && text.contains("(at helm_release.claims.chart[\"templates/")
            && text.contains("claim.yaml\"].devices.requests[0].exactly.selectors[0]"),
        "{text}"
    );
    std::fs::remove_file(stack.dir.join("chart.hcl")).unwrap();
    // A second release of the driver is refused at plan: the first owns its DeviceClasses.
    let second = Stack::inline(&format!(
        "{PROVIDERS}\n{}",
        driver_release("")
            .replace("\"dra-agree\"", "\"dra-second\"")
            .replace("nvidia-dra-agree", "nvidia-dra-second")
    ))
    .on(c)
    .with_vars(&[&format!("chart={}", driver_chart())]);
    let text = refused_plan(&second);
    assert!(
        text.contains("Second DRA driver")
            && text.contains("its DeviceClass gpu.nvidia.com belongs to the Helm release nvidia-dra-agree/dra-agree"),
        "{text}"
    );
}

/// The DynamicMIG table: one H100 whose driver publishes it as every MIG partition it could
/// be cut into, beside the full GPU, all consuming one counter set (partitionable devices).
fn dynamic_mig_cases() -> Vec<Case> {
    let profile = "device.attributes['gpu.nvidia.com'].profile";
    let memory = "device.capacity['gpu.nvidia.com'].memory";
    let partitions = |name, count: u32, selector: String, allocated| Case {
        name,
        spec: exactly(
            "mig.nvidia.com",
            &selector,
            &format!("\n      count: {count}"),
        ),
        allocated,
    };
    vec![
        partitions("dyn-3g", 1, format!("{profile} == '3g.40gb'"), true),
        partitions("dyn-two-3g", 2, format!("{profile} == '3g.40gb'"), true),
        // 4g at slices 0–3 and 3g at 4–7.
        partitions("dyn-4g-3g", 2, format!("{profile} in ['4g.40gb', '3g.40gb']"), true),
        // Three of them cannot be: the 4g overlaps the first 3g.
        partitions("dyn-three-of-4g-3g", 3, format!("{profile} in ['4g.40gb', '3g.40gb']"), false),
        // 4g and 7g both hold slices 0–3.
        partitions("dyn-4g-7g", 2, format!("{profile} in ['4g.40gb', '7g.80gb']"), false),
        partitions("dyn-seven-1g", 7, format!("{profile} == '1g.10gb'"), true),
        // Fourteen 1g devices match (with the media-engine ones), seven memory slices hold them.
        partitions("dyn-eight-1g", 8, format!("{profile}.startsWith('1g.10gb')"), false),
        partitions("dyn-two-20gb", 2, format!("{memory}.compareTo(quantity('20Gi')) < 0 && {memory}.compareTo(quantity('19Gi')) > 0"), true),
        gpu("", true, "dyn-full-gpu"),
        // The full GPU announces the largest profile's memory (80640Mi), not the card's.
        gpu(&format!("{memory}.compareTo(quantity('80Gi')) >= 0"), false, "dyn-full-80gi"),
        Case {
            name: "dyn-full-and-part",
            spec: "devices:\n  requests:\n  - name: gpu\n    exactly:\n      deviceClassName: gpu.nvidia.com\n  - name: mig\n    exactly:\n      deviceClassName: mig.nvidia.com\n".into(),
            allocated: false,
        },
        Case {
            name: "dyn-all-partitions",
            spec: exactly("mig.nvidia.com", "", "\n      allocationMode: All"),
            allocated: false,
        },
        Case {
            name: "dyn-first-available",
            spec: format!(
                "devices:\n  requests:\n  - name: gpu\n    firstAvailable:\n    - name: three\n      deviceClassName: mig.nvidia.com\n      count: 3\n      selectors:\n      - cel:\n          expression: {}\n    - name: two\n      deviceClassName: mig.nvidia.com\n      count: 2\n      selectors:\n      - cel:\n          expression: {}\n",
                serde_json::to_string(&format!("{profile} == '3g.40gb'")).unwrap(),
                serde_json::to_string(&format!("{profile} == '3g.40gb'")).unwrap()
            ),
            allocated: true,
        },
    ]
}

#[test]
fn under_dynamic_mig_gpustack_agrees_with_the_scheduler_on_partitions_and_their_counters() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let _beside = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let _fresh = Fresh::start(c);
    dra_node(c, "dra-h100-dyn", "NVIDIA H100 80GB HBM3", 1, None);
    let stack = Stack::inline(&format!(
        "{PROVIDERS}\n{}",
        driver_release("DynamicMIG = true")
    ))
    .on(c)
    .with_vars(&[&format!("chart={}", driver_chart())]);
    let _destroy = DestroyOnDrop(&stack);
    stack.ok("apply", &["--auto-approve"]);
    c.eventually(
        60,
        || {
            c.kubectl_ok(&[
                "get",
                "resourceslices",
                "--field-selector=spec.nodeName=dra-h100-dyn",
                "-o",
                "jsonpath={range .items[*]}{.spec.sharedCounters[*].name}{.spec.devices[*].name}{\"\\n\"}{end}",
            ])
        },
        |slices| slices.contains("gpu-0-counter-set") && slices.contains("gpu-0-mig-7g80gb-0-0"),
    );
    let cases = dynamic_mig_cases();
    assert_eq!(cases.len(), 13, "the README names the table's size");
    let (disagreements, text) = compare(c, &stack, &cases);
    assert!(disagreements.is_empty(), "{disagreements:#?}\n{text}");
    // Refused for the counters, not for want of devices.
    let text = unwrapped(&text);
    for reason in [
        "More devices than any node can give at once",
        "Not every matching device can be allocated at once",
        "partitions of one GPU excluding each other",
    ] {
        assert!(text.contains(reason), "{reason}: {text}");
    }
}

/// Both refusals need only a plan: the live cluster runs the GPU Operator (its ClusterPolicy
/// serves every GPU node with the device plugin). A GPUCluster planned beside a live
/// ClusterPolicy of the same release is the GPU model's (unit-tested); beside another
/// release's, it is also a second operator.
#[test]
fn the_device_plugin_beside_the_dra_driver_and_a_gpu_cluster_beside_a_cluster_policy_are_refused() {
    let c = cluster();
    c.fake_gpu_node_labelled(
        "dra-both",
        "NVIDIA A100-SXM4-80GB",
        1,
        &["gpustack.dev/dra-both=true"],
    );
    let driver = r#"resource "helm_release" "dra" {
  name             = "dra-both"
  namespace        = "nvidia-dra-both"
  create_namespace = true
  chart            = var.chart
  values = {
    gpuResourcesEnabledOverride = true
    kubeletPlugin = {
      nodeSelector = {
        "gpustack.dev/dra-both" = "true"
      }
    }
  }
}
"#;
    let stack = Stack::inline(&format!("{PROVIDERS}\n{driver}"))
        .on(c)
        .with_vars(&[&format!("chart={}", driver_chart())]);
    let text = refused_plan(&stack);
    assert!(
        text.contains("The device plugin and the DRA driver on one node")
            && text.contains("node dra-both (the GPU Operator's device plugin)")
            && text.contains("kubeletPlugin"),
        "{text}"
    );

    let operator = r#"resource "helm_release" "operator" {
  name             = "gpu-operator-dra"
  namespace        = "gpu-operator-dra"
  create_namespace = true
  chart            = var.chart
  values = {
    clusterPolicy = {
      deployCR = false
    }
    gpuCluster = {
      deployCR = true
    }
  }
}
"#;
    let stack = Stack::inline(&format!("{PROVIDERS}\n{operator}"))
        .on(c)
        .with_vars(&[&format!("chart={}", super::e2e::chart())]);
    let text = refused_plan(&stack);
    assert!(
        text.contains("Second GPU Operator")
            && text.contains("a cluster has a GPUCluster or a ClusterPolicy, never both"),
        "{text}"
    );
    c.kubectl_ok(&["delete", "node", "dra-both"]);
}

/// The DRA example end to end: the driver chart installs, the nodes' ResourceSlices appear, a
/// smoke test of four pods gets its GPUs through claims the real scheduler allocates, a
/// second plan is empty, and destroy removes it all (the plugin's slices with it).
#[test]
fn the_dra_example_installs_the_driver_and_four_pods_get_their_gpus_through_claims() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let _beside = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    for name in ["dra-ex-a", "dra-ex-b"] {
        c.fake_gpu_node_labelled(
            name,
            "NVIDIA A100-SXM4-80GB",
            2,
            &[
                "gpustack.dev/dra-example=true",
                "nvidia.com/gpu.deploy.device-plugin=false",
            ],
        );
    }
    let stack = Stack::example("dra-gpu", &[]).on(c).with_vars(&[
        &format!("chart={}", driver_chart()),
        r#"pool_selector={"gpustack.dev/dra-example"="true"}"#,
        "driver_namespace=nvidia-dra-example",
        "namespace=dra-example",
    ]);
    let _destroy = DestroyOnDrop(&stack);
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(applied.contains("Apply complete!"), "{applied}");
    let slices = || {
        c.kubectl_ok(&[
            "get",
            "resourceslices",
            "-o",
            "jsonpath={range .items[*]}{.spec.nodeName}={.spec.devices[*].name}{\"\\n\"}{end}",
        ])
    };
    let published = slices();
    assert!(
        published.contains("dra-ex-a=gpu-0 gpu-1") && published.contains("dra-ex-b=gpu-0 gpu-1"),
        "{published}"
    );
    assert_eq!(output(&stack, "smoke_test_passed"), true);
    let outputs = output(&stack, "allocated_devices");
    let devices = outputs.as_object().unwrap_or_else(|| panic!("{outputs}"));
    assert_eq!(devices.len(), 4, "{outputs}");
    // Each pod got one GPU of the two nodes (a GPU a finished pod gave back may go to another).
    assert!(
        devices.values().all(|d| d.as_array().is_some_and(
            |d| d.len() == 1 && d[0].as_str().is_some_and(|d| d.starts_with("dra-ex-"))
        )),
        "{outputs}"
    );

    stack.assert_no_changes();

    stack.ok("destroy", &["--auto-approve"]);
    c.eventually(60, slices, |s| !s.contains("dra-ex-"));
    let releases = c.kubectl_ok(&["get", "deviceclass", "-o", "name"]);
    assert!(!releases.contains("gpu.nvidia.com"), "{releases}");
    drop(_destroy);
    c.kubectl_ok(&["delete", "node", "dra-ex-a", "dra-ex-b"]);
}

/// The pods of the migration's workload: (name, node, the DRA claim the scheduler made for
/// its `nvidia.com/gpu`, if any), Running ones only, and how many are not Running.
fn trainer_pods(c: &TestCluster) -> (Vec<(String, String, String)>, usize) {
    let text = c.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        "dra-migration",
        "-l",
        "app=trainer",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName} {.status.extendedResourceClaimStatus.resourceClaimName} {.metadata.deletionTimestamp}{\"\\n\"}{end}",
    ]);
    let mut running = Vec::new();
    let mut other = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        // A pod being deleted (evicted) no longer counts as the workload's.
        if fields.get(4).is_some_and(|d| !d.is_empty()) {
            continue;
        }
        if fields.get(1) == Some(&"Running") {
            running.push((
                fields[0].to_owned(),
                fields.get(2).copied().unwrap_or_default().to_owned(),
                fields.get(3).copied().unwrap_or_default().to_owned(),
            ));
        } else {
            other += 1;
        }
    }
    (running, other)
}

/// The migration example on two pools of two A100 nodes (the live GPU Operator's device
/// plugin serving all four) with six pods asking for `nvidia.com/gpu`: pool b moves to DRA
/// node by node, each node emptied first; afterwards the six pods run again, those on pool a
/// on the device plugin's GPUs, those on pool b each with a DRA claim the scheduler made from
/// the DeviceClass's extendedResourceName, allocated on its node; pool b advertises no
/// `nvidia.com/gpu`; a second plan is empty.
#[test]
fn the_migration_example_moves_one_pool_to_dra_with_no_pod_left_without_a_device() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let _beside = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let _fresh = Fresh::start(c);
    const POOL: &str = "gpustack.dev/migration-pool";
    let nodes = [
        ("mig-a-0", "a"),
        ("mig-a-1", "a"),
        ("mig-b-0", "b"),
        ("mig-b-1", "b"),
    ];
    for (name, pool) in nodes {
        c.fake_gpu_node_labelled(
            name,
            "NVIDIA A100-SXM4-80GB",
            2,
            &[&format!("{NODE_LABEL}=true"), &format!("{POOL}={pool}")],
        );
    }
    for (name, _) in nodes {
        c.eventually(
            60,
            || {
                c.kubectl_ok(&[
                    "get",
                    "node",
                    name,
                    "-o",
                    "jsonpath={.status.allocatable.nvidia\\.com/gpu}",
                ])
            },
            |gpus| gpus == "2",
        );
    }
    let _ = c.kubectl(&[
        "delete",
        "namespace",
        "dra-migration",
        "--ignore-not-found",
        "--wait=true",
    ]);
    c.kubectl_ok(&["create", "namespace", "dra-migration"]);
    let workload = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: trainer\n  namespace: dra-migration\nspec:\n  replicas: 6\n  selector:\n    matchLabels:\n      app: trainer\n  template:\n    metadata:\n      labels:\n        app: trainer\n    spec:\n      terminationGracePeriodSeconds: 0\n      nodeSelector:\n        {NODE_LABEL}: \"true\"\n      tolerations:\n      - key: nvidia.com/gpu\n        operator: Exists\n      containers:\n      - name: train\n        image: busybox\n        resources:\n          limits:\n            nvidia.com/gpu: 1\n"
    );
    let path = std::env::temp_dir().join(format!("dra-migration-{}.yaml", std::process::id()));
    std::fs::write(&path, workload).unwrap();
    c.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    c.eventually(60, || trainer_pods(c), |(running, _)| running.len() == 6);

    let stack = Stack::example("dra-migration", &[]).on(c).with_vars(&[
        &format!("chart={}", driver_chart()),
        &format!("pool_label={POOL}"),
        r#"dra_pools=["b"]"#,
        "driver_namespace=nvidia-dra-migration",
    ]);
    let _destroy = DestroyOnDrop(&stack);
    let plan = unwrapped(&stack.ok("plan", &[]));
    // The plan says what moves, what runs there, and how it is emptied first.
    assert!(
        plan.contains("node mig-b-0: stops the device plugin (the node opts out of the device plugin")
            && plan.contains("the DRA driver release nvidia-dra-migration/nvidia-dra-driver-gpu publishes them for DRA claims")
            && plan.contains("GPU pods running: dra-migration/trainer-")
            && plan.contains("rollout: node by node by to-dra (at most 1 of 2 at once): cordons the node, evicts its GPU pods")
            && plan.contains("waits for NVIDIA's DRA driver to publish its GPUs")
            && plan.contains("nvidia.com/gpu 2 → 0")
            && plan.contains("publishes its 2 GPUs for DRA claims instead"),
        "{plan}"
    );
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(applied.contains("Apply complete!"), "{applied}");
    assert_eq!(
        output(&stack, "dra_nodes"),
        serde_json::json!(["mig-b-0", "mig-b-1"])
    );
    assert_eq!(
        output(&stack, "progress"),
        serde_json::json!({"mig-b-0": "done", "mig-b-1": "done"})
    );
    // Pool b advertises no nvidia.com/gpu; its GPUs are published for DRA.
    for node in ["mig-b-0", "mig-b-1"] {
        let gpus = c.kubectl_ok(&[
            "get",
            "node",
            node,
            "-o",
            "jsonpath={.status.allocatable.nvidia\\.com/gpu}",
        ]);
        assert!(gpus.is_empty() || gpus == "0", "{node}: {gpus}");
    }
    // Every pod runs again, each with a device: the device plugin's on pool a, a claim
    // allocated on its own node on pool b.
    let (running, _) = c.eventually(
        120,
        || trainer_pods(c),
        |(running, other)| running.len() == 6 && *other == 0,
    );
    let mut on_b = 0;
    for (pod, node, claim) in &running {
        if node.starts_with("mig-a-") {
            assert!(claim.is_empty(), "{pod} on {node} has claim {claim}");
            continue;
        }
        on_b += 1;
        assert!(
            !claim.is_empty(),
            "{pod} runs on {node} without a DRA claim"
        );
        let allocation = c.kubectl_ok(&[
            "get",
            "resourceclaim",
            "-n",
            "dra-migration",
            claim,
            "-o",
            "jsonpath={.status.allocation.devices.results[*].pool}",
        ]);
        assert_eq!(&allocation, node, "{pod}'s claim {claim}");
    }
    // Pool a has four GPUs for six pods: at least two run on pool b through DRA.
    assert!(on_b >= 2, "{running:?}");
    stack.assert_no_changes();
    let _ = c.kubectl(&["delete", "namespace", "dra-migration", "--wait=true"]);
    let _ = std::fs::remove_file(&path);
}

/// A node moved to DRA is not released while a pod holds a GPU the device plugin gave it (one
/// that tolerates the cordon, or was placed by name): the rollout stops there, naming it.
#[test]
fn a_pod_left_on_device_plugin_gpus_keeps_a_node_from_counting_as_moved_to_dra() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let _beside = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let _fresh = Fresh::start(c);
    c.fake_gpu_node_labelled(
        "dra-holder",
        "NVIDIA A100-SXM4-80GB",
        1,
        &[
            &format!("{NODE_LABEL}=true"),
            "nvidia.com/gpu.deploy.device-plugin=false",
        ],
    );
    // Placed by name, past the scheduler, as a pod that tolerates the cordon could be.
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: holder\n  namespace: {NAMESPACE}\nspec:\n  nodeName: dra-holder\n  terminationGracePeriodSeconds: 0\n  tolerations:\n  - operator: Exists\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    );
    let path = std::env::temp_dir().join(format!("dra-holder-{}.yaml", std::process::id()));
    std::fs::write(&path, pod).unwrap();
    c.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    c.eventually(
        60,
        || {
            c.kubectl_ok(&[
                "get",
                "pod",
                "-n",
                NAMESPACE,
                "holder",
                "-o",
                "jsonpath={.status.phase}",
            ])
        },
        |phase| phase == "Running",
    );
    let stack = Stack::inline(
        r#"variable "kubeconfig" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_node_rollout" "to_dra" {
  name           = "to-dra-holder"
  nodes          = ["dra-holder"]
  labels         = { "nvidia.com/gpu.deploy.device-plugin" = "false" }
  settle         = "dra"
  settle_timeout = "5s"
}
"#,
    )
    .on(c);
    let _destroy = DestroyOnDrop(&stack);
    let out = stack.run("apply", &["--auto-approve"]);
    let text = unwrapped(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{NAMESPACE}/holder hold GPUs the device plugin gave them"
        )) && text.contains("dra-holder"),
        "{text}"
    );
}
