//! examples/eks-nodegroup-a10g against moto, through aws-sdk-eks and aws-sdk-ec2: create (the
//! capacity section from EC2's GpuInfo), labels and taints changed in place with
//! UpdateNodegroupConfig, an instance-type change planned as a replacement with its reason,
//! a node group scaled outside gpustack reported as drift, and delete.

use gpustack_tests::faults::{Fault, FaultPlan, FaultProxy};
use gpustack_tests::moto::Moto;
use gpustack_tests::{repo_root, stderr, stdout};
use std::path::Path;

/// Moto with the EKS cluster `gpu` the example's node group joins.
fn moto_with_cluster(name: &str) -> Moto {
    let moto = Moto::start(&format!("{name}-{}", std::process::id()));
    moto.boto3(
        r#"boto3.client("eks", **kw).create_cluster(name="gpu", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-a", "subnet-b"]})"#,
    );
    moto
}

/// The example, its AWS calls going through `proxy`.
fn example_via<'m>(moto: &'m Moto, proxy: &FaultProxy) -> Stack<'m> {
    let stack = Stack {
        dir: tempfile::tempdir().unwrap(),
        moto,
        endpoint: proxy.endpoint.clone(),
    };
    copy_example(stack.dir.path());
    stack
}

struct Stack<'m> {
    dir: tempfile::TempDir,
    moto: &'m Moto,
    /// Where gpustack sends AWS calls: moto, or a fault proxy in front of it.
    endpoint: String,
}

impl Stack<'_> {
    fn command(&self, command: &[&str], extra: &[&str]) -> std::process::Command {
        let endpoint = format!("endpoint={}", self.endpoint);
        let mut args: Vec<&str> = command.to_vec();
        for v in [
            endpoint.as_str(),
            "cluster_name=gpu",
            "node_role=arn:aws:iam::123456789012:role/gpu-nodes",
            r#"subnets=["subnet-b","subnet-a"]"#,
        ]
        .iter()
        .chain(extra)
        {
            args.extend(["--var", v]);
        }
        let env: Vec<(&str, String)> = self.moto.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        gpustack_tests::gpustack_command(self.dir.path(), &args, &env)
    }

    fn run(&self, command: &[&str], extra: &[&str]) -> (i32, String, String) {
        let out = self.command(command, extra).output().unwrap();
        (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
    }

    fn nodegroup(&self) -> serde_json::Value {
        let out = self.moto.boto3(
            r#"
eks = boto3.client("eks", **kw)
try:
    print(json.dumps(eks.describe_nodegroup(clusterName="gpu", nodegroupName="gpu-a10g")["nodegroup"], default=str))
except eks.exceptions.ResourceNotFoundException:
    print("null")
"#,
        );
        serde_json::from_str(&out).unwrap()
    }
}

fn copy_example(to: &Path) {
    for entry in std::fs::read_dir(repo_root().join("examples/eks-nodegroup-a10g")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn eks_nodegroup_lifecycle_against_moto() {
    let moto = moto_with_cluster("eks");
    let stack = Stack {
        dir: tempfile::tempdir().unwrap(),
        moto: &moto,
        endpoint: moto.endpoint.clone(),
    };
    copy_example(stack.dir.path());

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    // moto's GpuInfo gives the A10G 22,888 MiB; the built-in catalog would say 24 GB, so
    // this line shows the live answer is used.
    assert!(
        out.contains(
            "nodegroup gpu-a10g: 2 × g5.xlarge (1× A10G) → nvidia.com/gpu 2 → 2 (no sharing; new pool; 22 GB per GPU)"
        ),
        "the capacity section names the GPUs EC2 reports:\n{out}"
    );

    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("gpus_per_node = 1"), "{out}");
    let group = stack.nodegroup();
    assert_eq!(group["instanceTypes"], serde_json::json!(["g5.xlarge"]));
    assert_eq!(group["labels"]["gpustack.dev/pool"], "a10g");
    assert_eq!(group["taints"][0]["effect"], "NO_SCHEDULE");
    assert_eq!(group["scalingConfig"]["desiredSize"], 2);

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");

    // Labels change in place: one added, one removed.
    let relabel = r#"labels={"gpustack.dev/team"="ml"}"#;
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[relabel]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("eks_nodegroup.a10g will be updated in-place"),
        "{out}"
    );
    assert!(!out.contains("must be replaced"), "{out}");
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[relabel]);
    assert_eq!(code, 0, "{out}{err}");
    let group = stack.nodegroup();
    assert_eq!(
        group["labels"],
        serde_json::json!({"gpustack.dev/team": "ml"})
    );
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[relabel]);
    assert_eq!(code, 0, "{out}{err}");

    // A node group scaled outside gpustack is drift, named by field.
    moto.boto3(
        r#"boto3.client("eks", **kw).update_nodegroup_config(clusterName="gpu", nodegroupName="gpu-a10g", scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 3})"#,
    );
    let (code, out, err) = stack.run(&["drift"], &[relabel]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("desired_size") && out.contains("2 -> 3"),
        "{out}"
    );

    // Another instance type replaces the node group, and says why.
    let t4 = "instance_type=g4dn.xlarge";
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[relabel, t4]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("eks_nodegroup.a10g must be replaced"), "{out}");
    assert!(
        out.contains("instance_types") && out.contains("forces replacement"),
        "{out}"
    );
    super::assert_capacity_snapshot("eks-nodegroup-replaced", &out, "nodegroup");
    // Without a rollout block, the disruption section says what EKS itself does to the nodes.
    assert!(
        out.contains("rollout: none: EKS drains each node as it scales the group to zero"),
        "{out}"
    );
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[relabel, t4]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        stack.nodegroup()["instanceTypes"],
        serde_json::json!(["g4dn.xlarge"])
    );

    let (code, out, err) = stack.run(&["destroy", "--auto-approve"], &[relabel, t4]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(stack.nodegroup().is_null(), "the node group is gone");
}

/// Throttling, a server error, a dropped connection and an answer lost after the node group
/// was created: the create is retried through all of them and makes exactly one node group.
#[test]
fn faults_during_create_are_retried_without_a_duplicate_node_group() {
    let moto = moto_with_cluster("eks-faults");
    let proxy = FaultProxy::start(
        &moto.endpoint,
        FaultPlan {
            matching: "POST /clusters/gpu/node-groups ".into(),
            faults: [
                Fault::Throttle,
                Fault::ServerError,
                Fault::Drop,
                Fault::LoseAnswer,
            ]
            .into(),
        },
    );
    let stack = example_via(&moto, &proxy);
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (attempts, faulted) = proxy.count("POST /clusters/gpu/node-groups ");
    assert_eq!(
        (attempts, faulted),
        (5, 4),
        "{:?}",
        proxy.log.lock().unwrap()
    );
    let groups = moto.boto3(
        r#"print(json.dumps(boto3.client("eks", **kw).list_nodegroups(clusterName="gpu")["nodegroups"]))"#,
    );
    assert_eq!(groups.trim(), r#"["gpu-a10g"]"#, "exactly one node group");
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// kill -9 between the create of a node group and the state write: the next apply adopts it
/// by its tag — no duplicate, and no "import it".
#[test]
fn a_node_group_created_by_a_run_killed_before_recording_it_is_adopted() {
    let moto = moto_with_cluster("eks-crash");
    let proxy = FaultProxy::start(
        &moto.endpoint,
        FaultPlan {
            matching: "POST /clusters/gpu/node-groups ".into(),
            faults: [Fault::Hang].into(),
        },
    );
    let stack = example_via(&moto, &proxy);
    gpustack_tests::kill_when(stack.command(&["apply", "--auto-approve"], &[]), || {
        !stack.nodegroup().is_null()
    });
    gpustack_tests::force_unlock_local(stack.dir.path());
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("adopted: this stack created it"), "{out}");
    assert!(!err.contains("import it"), "{err}");
    let groups = moto.boto3(
        r#"print(json.dumps(boto3.client("eks", **kw).list_nodegroups(clusterName="gpu")["nodegroups"]))"#,
    );
    assert_eq!(groups.trim(), r#"["gpu-a10g"]"#, "exactly one node group");
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// EC2 failing DescribeInstanceTypes (every attempt answered 500): the plan still has the
/// pool's capacity line, from the built-in table, and the line says so and why.
#[test]
fn a_failed_describe_instance_types_falls_back_to_the_table_and_says_so() {
    let moto = moto_with_cluster("eks-ec2-down");
    // EC2's query API is the one POST to `/`; EKS's REST paths start with /clusters.
    let proxy = FaultProxy::start(
        &moto.endpoint,
        FaultPlan {
            matching: "POST / HTTP".into(),
            faults: [Fault::ServerError; 20].into(),
        },
    );
    let stack = example_via(&moto, &proxy);
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    let lines = super::capacity_lines(&out, "nodegroup gpu-a10g");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "nodegroup gpu-a10g: 2 × g5.xlarge (1× A10G) → nvidia.com/gpu 2 → 2 (no sharing; new pool; 24 GB per GPU; GPUs from the built-in table (DescribeInstanceTypes failed: "
        )),
        "{out}"
    );
    let (attempts, faulted) = proxy.count("POST / HTTP");
    assert!(attempts >= 1 && attempts == faulted, "{attempts} {faulted}");
}

/// A Terraform stack's `aws_eks_node_group` with its `provider "aws"` block as Terraform's AWS
/// provider reads it (static keys, per-service endpoints, default tags), on moto: its GPUs
/// from EC2 in the plan, created with the default tags under its own, an empty second plan,
/// drift when scaled outside, and destroyed.
#[test]
fn a_terraform_aws_eks_node_group_applies_drifts_and_is_destroyed() {
    let moto = moto_with_cluster("eks-terraform");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"terraform {{
  required_providers {{
    aws = {{
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }}
  }}
}}

provider "aws" {{
  region                      = "us-east-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true

  endpoints {{
    eks = "{endpoint}"
    ec2 = "{endpoint}"
  }}

  default_tags {{
    tags = {{
      team = "ml"
    }}
  }}
}}

resource "aws_eks_node_group" "g5" {{
  cluster_name    = "gpu"
  node_group_name = "g5"
  node_role_arn   = "arn:aws:iam::123456789012:role/gpu-nodes"
  subnet_ids      = ["subnet-a", "subnet-b"]
  instance_types  = ["g5.xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"

  scaling_config {{
    desired_size = 2
    min_size     = 0
    max_size     = 4
  }}

  labels = {{
    "gpustack.dev/pool" = "g5"
  }}

  taint {{
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }}

  tags = {{
    cost-center = "research"
  }}
}}
"#,
            endpoint = moto.endpoint
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let output = gpustack_tests::gpustack_command(dir.path(), args, &[])
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            stdout(&output),
            stderr(&output),
        )
    };
    let group = || {
        serde_json::from_str::<serde_json::Value>(&moto.boto3(
            r#"print(json.dumps(boto3.client("eks", **kw).describe_nodegroup(clusterName="gpu", nodegroupName="g5")["nodegroup"], default=str))"#,
        ))
        .unwrap()
    };

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("nodegroup g5: 2 × g5.xlarge (1× A10G) → nvidia.com/gpu 2 → 2 (no sharing; new pool; 22 GB per GPU)"),
        "the capacity section names the GPUs EC2 reports:\n{out}"
    );
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let live = group();
    assert_eq!(live["instanceTypes"], serde_json::json!(["g5.xlarge"]));
    // The data source reads the node group back, in the AWS provider's schema.
    std::fs::write(
        dir.path().join("read.tf"),
        "data \"aws_eks_node_group\" \"read\" {\n  cluster_name    = \"gpu\"\n  node_group_name = \"g5\"\n}\n\noutput \"read_instance_types\" {\n  value = data.aws_eks_node_group.read.instance_types\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, read, err) = run(&["output", "-json", "read_instance_types"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(read.trim(), r#"["g5.xlarge"]"#, "{read}");
    assert_eq!(live["labels"]["gpustack.dev/pool"], "g5");
    assert_eq!(live["taints"][0]["effect"], "NO_SCHEDULE");
    assert_eq!(live["tags"]["team"], "ml", "{live}");
    assert_eq!(live["tags"]["cost-center"], "research", "{live}");

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");
    let (code, out, err) = run(&["state", "show", "aws_eks_node_group.g5"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tags_all"), "{out}");

    moto.boto3(
        r#"boto3.client("eks", **kw).update_nodegroup_config(clusterName="gpu", nodegroupName="g5", scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 3})"#,
    );
    let (code, out, err) = run(&["drift"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("aws_eks_node_group.g5 has changed") && out.contains("desired_size"),
        "{out}"
    );

    let (code, out, err) = run(&["destroy", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
}
