//! moto in server mode, the test world's AWS: installed from PyPI at the pinned version by
//! tests/cluster/moto, answering EC2, EKS and S3 calls on 127.0.0.1.

use gpustack_tests::moto::Moto;

#[test]
fn moto_serves_ec2_gpu_instance_types_and_eks() {
    let moto = Moto::start(&format!("tests-{}", std::process::id()));
    let out = moto.boto3(
        r#"
ec2 = boto3.client("ec2", **kw)
types = ec2.describe_instance_types(InstanceTypes=["g5.xlarge", "p4d.24xlarge"])["InstanceTypes"]
eks = boto3.client("eks", **kw)
print(json.dumps({
    "gpus": {t["InstanceType"]: t.get("GpuInfo", {}).get("Gpus", []) for t in types},
    "clusters": eks.list_clusters()["clusters"],
}))
"#,
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let g5 = &report["gpus"]["g5.xlarge"][0];
    assert_eq!(g5["Name"], "A10G", "{report}");
    assert_eq!(g5["Count"], 1);
    assert_eq!(report["gpus"]["p4d.24xlarge"][0]["Count"], 8, "{report}");
    assert_eq!(report["clusters"], serde_json::json!([]));
}

/// Several `moto start` at the same moment on an empty cache: one installs under the lock, the
/// others wait for it; a half-finished install left by an earlier run is made again, never
/// used; two starts of one server name give one server.
#[test]
fn concurrent_starts_on_an_empty_cache_install_moto_once() {
    let world = tempfile::tempdir().unwrap();
    let cache = world.path().join("cache");
    let home = world.path().join("home");
    let version = gpustack_tests::cluster::versions()["MOTO_VERSION"].clone();
    // What an install killed halfway leaves: a virtual environment without its completion mark.
    let half_made = cache.join(format!("moto-{version}"));
    std::fs::create_dir_all(half_made.join("bin")).unwrap();
    std::fs::write(half_made.join("bin/half-made"), "").unwrap();

    let script = gpustack_tests::repo_root().join("tests/cluster/moto");
    let names = ["lock-a", "lock-b", "lock-c", "lock-c"];
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            std::process::Command::new(&script)
                .args(["start", name])
                .env("GPUSTACK_TESTWORLD_CACHE", &cache)
                .env("GPUSTACK_TESTWORLD_HOME", &home)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect();
    let stop = |name: &str| {
        let _ = std::process::Command::new(&script)
            .args(["stop", name])
            .env("GPUSTACK_TESTWORLD_CACHE", &cache)
            .env("GPUSTACK_TESTWORLD_HOME", &home)
            .output();
    };
    for name in ["lock-a", "lock-b", "lock-c"] {
        stop(name);
    }

    let mut installs = 0;
    let mut endpoints = Vec::new();
    for (name, out) in names.iter().zip(&outputs) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "moto start {name} failed:\n{stderr}");
        installs += stderr.matches("installing moto[server]").count();
        let endpoint = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(
            endpoint.starts_with("http://127.0.0.1:"),
            "{name}: {endpoint:?}"
        );
        endpoints.push(endpoint);
    }
    assert_eq!(installs, 1, "one install for four starts");
    assert!(half_made.join(".complete").is_file());
    assert!(
        !half_made.join("bin/half-made").exists(),
        "the half-made install was used"
    );
    assert_eq!(
        endpoints[2], endpoints[3],
        "two starts of lock-c gave two servers"
    );
    assert_ne!(endpoints[0], endpoints[1]);
}
