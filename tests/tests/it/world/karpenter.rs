//! modules/karpenter-gpu against the real Karpenter v1 CRDs (the pinned upstream data), so that
//! the API server's own validation of NodePool and EC2NodeClass judges what the module writes.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::{copy_dir, gpustack, repo_root, stderr, stdout};

/// Karpenter's v1 CRDs from the pinned upstream data, established.
fn install_karpenter_crds(cluster: &TestCluster) {
    let crds = gpustack_tests::upstream("crds");
    for crd in [
        "karpenter.sh_nodepools.yaml",
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
    ] {
        let path = crds.join(crd);
        cluster.kubectl_ok(&["apply", "--server-side", "-f", path.to_str().unwrap()]);
    }
    cluster.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/nodepools.karpenter.sh",
        "crd/ec2nodeclasses.karpenter.k8s.aws",
    ]);
}

#[test]
fn karpenter_gpu_module_applies_against_the_real_crds() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    install_karpenter_crds(&cluster);
    let name = format!("gpu-{}", std::process::id());
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("modules"), &root.path().join("modules"));
    let stack = root.path().join("stack");
    std::fs::create_dir_all(&stack).unwrap();
    std::fs::write(
        stack.join("main.hcl"),
        format!(
            "provider \"kubernetes\" {{\n  config_path = \"{}\"\n}}\n\nmodule \"karpenter\" {{\n  source       = \"../modules/karpenter-gpu\"\n  name         = \"{name}\"\n  cluster_name = \"gpu\"\n  node_role    = \"KarpenterNodeRole-gpu\"\n}}\n",
            cluster.kubeconfig.display(),
        ),
    )
    .unwrap();
    let out = gpustack(&stack, &["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    // The NodePool's GPU ceiling in the capacity section: physical GPUs, as Karpenter counts.
    assert!(
        stdout(&out).contains(&format!("karpenter nodepool {name}: nvidia.com/gpu 0 → 32 (a ceiling on physical GPUs: the autoscaler does not count sharing)")),
        "{}",
        stdout(&out)
    );
    let pool: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(&[
        "get",
        "nodepools.karpenter.sh",
        &name,
        "-o",
        "json",
    ]))
    .unwrap();
    let spec = &pool["spec"];
    assert_eq!(spec["disruption"]["consolidationPolicy"], "WhenEmpty");
    assert_eq!(spec["disruption"]["consolidateAfter"], "30s");
    assert_eq!(spec["limits"]["nvidia.com/gpu"], "32");
    assert_eq!(
        spec["template"]["spec"]["taints"][0]["key"],
        "nvidia.com/gpu"
    );
    let families = &spec["template"]["spec"]["requirements"][0];
    assert_eq!(families["key"], "karpenter.k8s.aws/instance-family");
    assert_eq!(
        families["values"],
        serde_json::json!(["p3", "p4d", "p5", "g4dn", "g5"])
    );
    let out = gpustack(&stack, &["plan", "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = gpustack(&stack, &["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// examples/karpenter-gpu-fleet: the module stamped once per entry of a map (for_each on a
/// module); removing an entry destroys that pool's objects and nothing else.
#[test]
fn karpenter_gpu_fleet_stamps_a_pool_per_map_entry() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    install_karpenter_crds(&cluster);
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("modules"), &root.path().join("modules"));
    let stack = root.path().join("examples/karpenter-gpu-fleet");
    copy_dir(&repo_root().join("examples/karpenter-gpu-fleet"), &stack);
    let run = std::process::id();
    let pools = |entries: &[(&str, u32)]| {
        let body: Vec<String> = entries
            .iter()
            .map(|(name, limit)| {
                format!(
                    "  {name}-{run} = {{\n    instance_families = [\"g5\"]\n    capacity_types    = [\"spot\"]\n    gpu_limit         = {limit}\n  }}\n"
                )
            })
            .collect();
        format!(
            "kubeconfig = \"{}\"\npools = {{\n{}}}\n",
            cluster.kubeconfig.display(),
            body.concat()
        )
    };
    let vars = stack.join("fleet.tfvars");
    let with_vars = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--var-file", vars.to_str().unwrap()]);
        gpustack(&stack, &all)
    };
    // NodePool names carry the run's id, which the snapshots show as RUN.
    let ceilings = |name: &str, plan: &str| {
        super::assert_capacity_snapshot(
            name,
            &plan.replace(&format!("-{run}"), "-RUN"),
            "karpenter nodepool",
        )
    };
    std::fs::write(&vars, pools(&[("training", 64), ("inference", 16)])).unwrap();
    let out = with_vars(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    ceilings("karpenter-fleet-new", &stdout(&out));
    for (name, limit) in [("training", "64"), ("inference", "16")] {
        let pool: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(&[
            "get",
            "nodepools.karpenter.sh",
            &format!("gpu-{name}-{run}"),
            "-o",
            "json",
        ]))
        .unwrap();
        assert_eq!(pool["spec"]["limits"]["nvidia.com/gpu"], limit, "{pool}");
    }
    let out = with_vars(&["plan", "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    std::fs::write(&vars, pools(&[("training", 64)])).unwrap();
    let out = with_vars(&["plan"]);
    let plan = stdout(&out);
    assert!(out.status.success(), "{plan}{}", stderr(&out));
    ceilings("karpenter-fleet-pool-removed", &plan);
    assert!(
        plan.contains(&format!("module.pool[\"inference-{run}\"]"))
            && !plan.contains(&format!("module.pool[\"training-{run}\"]")),
        "only the removed pool changes:\n{plan}"
    );
    let out = with_vars(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let gone = cluster.kubectl(&[
        "get",
        "nodepools.karpenter.sh",
        &format!("gpu-inference-{run}"),
    ]);
    assert!(!gone.status.success(), "the removed pool is deleted");
    let out = with_vars(&["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
