//! moto in server mode, the test world's AWS: installed from PyPI at the pinned version by
//! tests/cluster/moto, answering EC2 and EKS calls on 127.0.0.1.

#![allow(clippy::panic, clippy::unwrap_used)]

use gpustack_tests::repo_root;
use std::process::Command;

struct Moto(String);

impl Moto {
    fn start(name: &str) -> (Self, String) {
        let out = Command::new(repo_root().join("tests/cluster/moto"))
            .args(["start", name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "moto start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            Moto(name.to_owned()),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        )
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("tests/cluster/moto"))
            .args(["stop", &self.0])
            .output();
    }
}

#[test]
fn moto_serves_ec2_gpu_instance_types_and_eks() {
    let (_moto, endpoint) = Moto::start(&format!("tests-{}", std::process::id()));
    let python = Command::new(repo_root().join("tests/cluster/moto"))
        .arg("python")
        .output()
        .unwrap();
    let python = String::from_utf8_lossy(&python.stdout).trim().to_owned();
    let script = format!(
        r#"
import boto3, json
kw = dict(endpoint_url="{endpoint}", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
ec2 = boto3.client("ec2", **kw)
types = ec2.describe_instance_types(InstanceTypes=["g5.xlarge", "p4d.24xlarge"])["InstanceTypes"]
eks = boto3.client("eks", **kw)
print(json.dumps({{
    "gpus": {{t["InstanceType"]: t.get("GpuInfo", {{}}).get("Gpus", []) for t in types}},
    "clusters": eks.list_clusters()["clusters"],
}}))
"#
    );
    let out = Command::new(python).args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g5 = &report["gpus"]["g5.xlarge"][0];
    assert_eq!(g5["Name"], "A10G", "{report}");
    assert_eq!(g5["Count"], 1);
    assert_eq!(report["gpus"]["p4d.24xlarge"][0]["Count"], 8, "{report}");
    assert_eq!(report["clusters"], serde_json::json!([]));
}
