//! A synthetic Terraform JSON plan (format 1.2) and the `.tf` files it was made from, for the
//! `gpustack review` benchmark and its test: `total` resource changes, of which `gpu` are
//! GPU-relevant (node pools of the three clouds, time-slicing ConfigMaps, a GPU Operator
//! release); every hundredth AKS pool asks for MIG on T4s, which the review refuses.

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// The errors the plan of [`write`] makes the review report: one per hundredth AKS pool.
pub fn expected_errors(gpu: usize) -> usize {
    (0..gpu)
        .filter(|i| i % 4 == 2 && (i / 4).is_multiple_of(100))
        .count()
}

fn change(address: &str, type_name: &str, after: Value, unknown: Value) -> Value {
    let name = address.rsplit('.').next().unwrap_or(address);
    json!({
        "address": address,
        "mode": "managed",
        "type": type_name,
        "name": name,
        "provider_name": format!("registry.terraform.io/hashicorp/{}", type_name.split('_').next().unwrap_or("")),
        "change": {
            "actions": ["create"],
            "before": null,
            "after": after,
            "after_unknown": unknown,
            "before_sensitive": false,
            "after_sensitive": {}
        }
    })
}

fn gpu_change(i: usize, tf: &mut String) -> Value {
    let n = i / 4;
    match i % 4 {
        0 => {
            let _ = writeln!(
                tf,
                "resource \"google_container_node_pool\" \"g{n}\" {{\n  name = \"g{n}\"\n}}\n"
            );
            change(
                &format!("google_container_node_pool.g{n}"),
                "google_container_node_pool",
                json!({
                    "name": format!("g{n}"), "cluster": "ml", "location": "us-central1-a", "node_count": 2,
                    "node_config": [{"machine_type": "a2-ultragpu-1g",
                        "labels": {"team": "ml", "gke-no-default-nvidia-gpu-device-plugin": "true"},
                        "guest_accelerator": [{"type": "nvidia-a100-80gb", "count": 1,
                            "gpu_driver_installation_config": [{"gpu_driver_version": "INSTALLATION_DISABLED"}]}]}]
                }),
                json!({"id": true, "instance_group_urls": true}),
            )
        }
        1 => {
            let _ = writeln!(
                tf,
                "resource \"aws_eks_node_group\" \"e{n}\" {{\n  node_group_name = \"e{n}\"\n}}\n"
            );
            change(
                &format!("aws_eks_node_group.e{n}"),
                "aws_eks_node_group",
                json!({
                    "cluster_name": "ml", "node_group_name": format!("e{n}"), "instance_types": ["g5.xlarge"],
                    "ami_type": "AL2023_x86_64_NVIDIA", "scaling_config": [{"desired_size": 2, "min_size": 1, "max_size": 4}],
                    "labels": {"nvidia.com/device-plugin.config": "shared"}, "taint": []
                }),
                json!({"arn": true, "id": true, "status": true}),
            )
        }
        2 => {
            let t4 = n.is_multiple_of(100);
            let _ = writeln!(
                tf,
                "resource \"azurerm_kubernetes_cluster_node_pool\" \"a{n}\" {{\n  name         = \"a{n}\"\n  gpu_instance = \"MIG1g\"\n}}\n"
            );
            change(
                &format!("azurerm_kubernetes_cluster_node_pool.a{n}"),
                "azurerm_kubernetes_cluster_node_pool",
                json!({
                    "name": format!("a{n}"),
                    "vm_size": if t4 { "Standard_NC4as_T4_v3" } else { "Standard_NC24ads_A100_v4" },
                    "node_count": 1, "gpu_instance": "MIG1g", "mode": "User"
                }),
                json!({"id": true}),
            )
        }
        _ => {
            let _ = writeln!(
                tf,
                "resource \"kubernetes_config_map_v1\" \"c{n}\" {{\n  metadata {{\n    name = \"c{n}\"\n  }}\n}}\n"
            );
            change(
                &format!("kubernetes_config_map_v1.c{n}"),
                "kubernetes_config_map_v1",
                json!({
                    "metadata": [{"name": format!("c{n}"), "namespace": "gpu-operator"}],
                    "data": {"shared": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"}
                }),
                json!({"id": true, "metadata": [{"uid": true, "resource_version": true}]}),
            )
        }
    }
}

/// Something no provider of gpustack's reviews, about the size of a real resource's values.
fn other_change(i: usize, tf: &mut String) -> Value {
    let _ = writeln!(
        tf,
        "resource \"aws_iam_role\" \"r{i}\" {{\n  name = \"r{i}\"\n}}\n"
    );
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    })
    .to_string();
    change(
        &format!("aws_iam_role.r{i}"),
        "aws_iam_role",
        json!({
            "name": format!("r{i}"), "path": "/", "assume_role_policy": policy,
            "description": "a role of the synthetic plan", "force_detach_policies": false,
            "max_session_duration": 3600, "permissions_boundary": null,
            "tags": {"team": "ml", "env": "bench", "owner": format!("owner-{}", i % 17)},
            "inline_policy": [], "managed_policy_arns": []
        }),
        json!({"arn": true, "create_date": true, "id": true, "name_prefix": true, "tags_all": true, "unique_id": true}),
    )
}

/// Writes `plan.json` and `main.tf` into `dir`: `total` changes, `gpu` of them GPU-relevant.
pub fn write(dir: &Path, total: usize, gpu: usize) {
    let mut tf = String::new();
    let mut changes: Vec<Value> = Vec::with_capacity(total);
    // The GPU Operator release is the last of both counts.
    let (total, gpu) = (total.max(1) - 1, gpu.max(1) - 1);
    let spacing = total / gpu.max(1);
    let mut made_gpu = 0;
    for i in 0..total {
        if made_gpu < gpu && i % spacing.max(1) == 0 {
            changes.push(gpu_change(made_gpu, &mut tf));
            made_gpu += 1;
        } else {
            changes.push(other_change(i, &mut tf));
        }
    }
    tf.push_str("resource \"helm_release\" \"gpu_operator\" {\n  name  = \"gpu-operator\"\n  chart = \"gpu-operator\"\n}\n");
    changes.push(change(
        "helm_release.gpu_operator",
        "helm_release",
        json!({"name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
               "repository": "https://helm.ngc.nvidia.com/nvidia", "set": [], "set_list": [],
               "values": ["devicePlugin:\n  config:\n    name: c0\n"]}),
        json!({"id": true, "manifest": true, "metadata": true}),
    ));
    let plan = json!({
        "format_version": "1.2",
        "terraform_version": "1.9.8",
        "resource_changes": changes,
    });
    std::fs::create_dir_all(dir).expect("create the plan's directory");
    std::fs::write(dir.join("plan.json"), plan.to_string()).expect("write plan.json");
    std::fs::write(dir.join("main.tf"), tf).expect("write main.tf");
}
