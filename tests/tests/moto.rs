//! moto in server mode, the test world's AWS: installed from PyPI at the pinned version by
//! tests/cluster/moto, answering EC2, EKS and S3 calls on 127.0.0.1.

#![allow(clippy::panic, clippy::unwrap_used)]

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
