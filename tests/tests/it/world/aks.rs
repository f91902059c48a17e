//! AKS node pools through azure_core / azure_identity against the AKS fake (HTTPS, tokens
//! from its Entra ID endpoint): the official examples round-trip through the fake; gpustack
//! creates a pool under injected faults without a duplicate, plans node_count as an update and
//! vm_size as a replacement, reports a pool scaled outside as drift, refuses to take over a
//! pool it did not make, and deletes; the client secret and tokens never reach output or state.

use gpustack_tests::aks::{AksFake, CLIENT_SECRET, Fault};
use gpustack_tests::{stderr, stdout};
use hyper::{Method, StatusCode};
use serde_json::{Value as Json, json};
use std::path::PathBuf;

const SUB: &str = "00000000-0000-0000-0000-000000000000";

fn example(name: &str) -> Json {
    let path = gpustack_tests::upstream("aks-2026-08-01").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Every field the example shows, the fake's answer has with the same value (but for the
/// values of `skip`, which only need to be there).
fn assert_shows(actual: &Json, expected: &Json, skip: &[&str], at: &str) {
    match expected {
        Json::Object(fields) => {
            for (key, value) in fields {
                let got = actual
                    .get(key)
                    .unwrap_or_else(|| panic!("{at}: no {key} in {actual}"));
                if !skip.contains(&key.as_str()) {
                    assert_shows(got, value, skip, &format!("{at}.{key}"));
                }
            }
        }
        _ => assert_eq!(actual, expected, "{at}"),
    }
}

/// Follows an operation the way a client must: Azure-AsyncOperation until it is final.
fn finish(fake: &AksFake, headers: &hyper::HeaderMap) {
    let url = headers["azure-asyncoperation"].to_str().unwrap().to_owned();
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (status, _, body) = fake.call(Method::GET, &url, None, &[]);
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "InProgress" {
            assert_eq!(body["status"], "Succeeded", "{body}");
            return;
        }
    }
    panic!("the operation did not finish");
}

fn path(e: &Json) -> String {
    let p = &e["parameters"];
    format!(
        "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.ContainerService/managedClusters/{}/agentPools/{}?api-version={}",
        p["subscriptionId"].as_str().unwrap(),
        p["resourceGroupName"].as_str().unwrap(),
        p["resourceName"].as_str().unwrap(),
        p["agentPoolName"].as_str().unwrap(),
        p["api-version"].as_str().unwrap()
    )
}

#[test]
fn the_fake_answers_every_official_example_as_it_shows() {
    let fake = AksFake::start(&[(&format!("{SUB}/rg1/clustername1"), "1.9.6")], None);
    // Values the service makes up: only their presence is compared.
    let made_up = ["eTag", "nodeImageVersion"];

    // Create with the fully managed GPU experience; its GET; delete (202 + Location).
    let managed = example("AgentPoolsCreate_ManagedGPU.json");
    let (status, headers, body) = fake.call(
        Method::PUT,
        &path(&managed),
        Some(&managed["parameters"]["parameters"]),
        &[],
    );
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_shows(
        &body,
        &managed["responses"]["201"]["body"],
        &made_up,
        "managed 201",
    );
    finish(&fake, &headers);
    let (_, _, body) = fake.call(Method::GET, &path(&managed), None, &[]);
    assert_shows(
        &body,
        &managed["responses"]["200"]["body"],
        &made_up,
        "managed 200",
    );

    let delete = example("AgentPoolsDelete.json");
    let (status, headers, _) = fake.call(Method::DELETE, &path(&delete), None, &[]);
    assert_eq!(status, StatusCode::ACCEPTED);
    let location = headers["location"].to_str().unwrap();
    let expected = delete["responses"]["202"]["headers"]["location"]
        .as_str()
        .unwrap();
    let shape = |url: &str| {
        let path = url.split("://").nth(1).unwrap();
        let path = &path[path.find('/').unwrap()..];
        let (head, query) = path.split_once('?').unwrap();
        (
            head.rsplit_once('/').unwrap().0.to_owned(),
            query.to_owned(),
        )
    };
    assert_eq!(
        shape(location),
        shape(expected),
        "Location as the example shows it"
    );
    finish(&fake, &headers);
    let (status, _, _) = fake.call(Method::GET, &path(&delete), None, &[]);
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = fake.call(Method::DELETE, &path(&delete), None, &[]);
    assert_eq!(
        status,
        StatusCode::NO_CONTENT,
        "{}",
        json!(delete["responses"]["204"])
    );

    // Create/Update with spot, labels, taints and tags: 201 then 200 as shown.
    let create = example("AgentPoolsCreate_Update.json");
    let (status, headers, body) = fake.call(
        Method::PUT,
        &path(&create),
        Some(&create["parameters"]["parameters"]),
        &[],
    );
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_shows(
        &body,
        &create["responses"]["201"]["body"],
        &made_up,
        "create 201",
    );
    finish(&fake, &headers);
    let (_, _, body) = fake.call(Method::GET, &path(&create), None, &[]);
    assert_shows(
        &body,
        &create["responses"]["200"]["body"],
        &made_up,
        "create 200",
    );

    // Update of the existing pool to autoscaling: 200 Updating, then as the example's 200.
    let update = example("AgentPools_Update.json");
    let (status, headers, body) = fake.call(
        Method::PUT,
        &path(&update),
        Some(&update["parameters"]["parameters"]),
        &[],
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["properties"]["provisioningState"], "Updating");
    assert_shows(
        &body,
        &update["responses"]["201"]["body"],
        &["eTag", "nodeImageVersion", "provisioningState"],
        "update",
    );
    finish(&fake, &headers);
    let (_, _, body) = fake.call(Method::GET, &path(&update), None, &[]);
    assert_shows(
        &body,
        &update["responses"]["200"]["body"],
        &made_up,
        "update 200",
    );

    // Get: the example's pool written back as a client does (read-modify-write under its
    // ETag) reads back as the example shows it.
    let get = example("AgentPoolsGet.json");
    let (_, _, live) = fake.call(Method::GET, &path(&get), None, &[]);
    let etag = live["properties"]["eTag"].as_str().unwrap().to_owned();
    let mut body = get["responses"]["200"]["body"].clone();
    body["properties"]["scaleSetPriority"] = live["properties"]["scaleSetPriority"].clone();
    body["properties"]["scaleSetEvictionPolicy"] =
        live["properties"]["scaleSetEvictionPolicy"].clone();
    let (status, _, answer) = fake.call(
        Method::PUT,
        &path(&get),
        Some(&body),
        &[("if-match", "\"stale\"")],
    );
    assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{answer}");
    let (status, headers, answer) = fake.call(
        Method::PUT,
        &path(&get),
        Some(&body),
        &[("if-match", &etag)],
    );
    assert_eq!(status, StatusCode::OK, "{answer}");
    finish(&fake, &headers);
    let (status, _, answer) = fake.call(Method::GET, &path(&get), None, &[]);
    assert_eq!(status, StatusCode::OK);
    assert_shows(
        &answer,
        &get["responses"]["200"]["body"],
        &made_up,
        "get 200",
    );

    // ARM's refusals: an immutable property, an unknown api-version.
    let mut resized = answer.clone();
    resized["properties"]["vmSize"] = json!("Standard_NC4as_T4_v3");
    let (status, _, refused) = fake.call(Method::PUT, &path(&get), Some(&resized), &[]);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(refused["error"]["code"], "PropertyChangeNotAllowed");
    let old = path(&get).replace("2026-08-01", "2019-01-01");
    let (status, _, _) = fake.call(Method::GET, &old, None, &[]);
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// A stack of one AKS pool, run with the fake's endpoint and credentials.
struct Stack<'f> {
    dir: tempfile::TempDir,
    fake: &'f AksFake,
}

/// The fake with one cluster, `ml-rg/ml-aks`, where the stack's pool goes.
fn ml_aks() -> AksFake {
    AksFake::start(&[(&format!("{SUB}/ml-rg/ml-aks"), "1.34.2")], None)
}

impl<'f> Stack<'f> {
    /// [`STACK`] in a directory of its own.
    fn of_one_pool(fake: &'f AksFake) -> Self {
        let stack = Stack {
            dir: tempfile::tempdir().unwrap(),
            fake,
        };
        std::fs::write(stack.dir.path().join("main.hcl"), STACK).unwrap();
        stack
    }
}

const STACK: &str = r#"
variable "endpoint" { type = string }
variable "vm_size" {
  type    = string
  default = "Standard_NC4as_T4_v3"
}
variable "node_count" {
  type    = number
  default = 1
}
variable "name" {
  type    = string
  default = "gpu"
}

provider "azure" {
  subscription_id = "00000000-0000-0000-0000-000000000000"
  endpoint        = var.endpoint
}

resource "aks_nodepool" "gpu" {
  resource_group = "ml-rg"
  cluster        = "ml-aks"
  name           = var.name
  vm_size        = var.vm_size
  node_count     = var.node_count
  node_labels    = { "gpustack.dev/pool" = "t4" }
  node_taints    = ["nvidia.com/gpu=present:NoSchedule"]
  gpu_driver     = "Install"
  tags           = { team = "ml" }
}

output "pool_id" {
  value = aks_nodepool.gpu.id
}
"#;

impl Stack<'_> {
    fn command(&self, args: &[&str], vars: &[&str]) -> std::process::Command {
        let endpoint = format!("endpoint={}", self.fake.endpoint);
        let mut all: Vec<&str> = args.to_vec();
        for v in std::iter::once(endpoint.as_str()).chain(vars.iter().copied()) {
            all.extend(["--var", v]);
        }
        let env = self.fake.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        gpustack_tests::gpustack_command(self.dir.path(), &all, &env)
    }

    fn run(&self, args: &[&str], vars: &[&str]) -> (i32, String, String) {
        let output = self.command(args, vars).output().unwrap();
        let (out, err) = (stdout(&output), stderr(&output));
        for secret in [CLIENT_SECRET, "fake-access-token"] {
            assert!(
                !out.contains(secret) && !err.contains(secret),
                "a credential reached the output:\n{out}{err}"
            );
        }
        (output.status.code().unwrap_or(-1), out, err)
    }
}

fn state_text(dir: &std::path::Path) -> String {
    let path: PathBuf = dir.join(".gpustack").join("state.json");
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn aks_pool_lifecycle_with_faults_drift_and_replacement() {
    let fake = ml_aks();
    let stack = Stack::of_one_pool(&fake);
    let pool_id = format!("{SUB}/ml-rg/ml-aks/gpu");

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    super::assert_capacity_snapshot("aks-nodepool-new", &out, "nodepool");

    // The create meets a 429 with Retry-After, a 500, a dropped connection, and an answer
    // lost after the pool was made: it still makes exactly one pool, its own.
    fake.inject(
        Method::PUT,
        &[
            Fault::Throttle(1),
            Fault::ServerError,
            Fault::Drop,
            Fault::LoseAnswer,
        ],
    );
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let puts = fake.log().iter().filter(|l| l.starts_with("PUT ")).count();
    assert_eq!(
        puts,
        5,
        "4 faulted attempts and the one that found its pool: {:?}",
        fake.log()
    );
    assert_eq!(fake.pools(), std::slice::from_ref(&pool_id));
    let pool = fake.pool(&pool_id).unwrap();
    assert_eq!(pool["properties"]["provisioningState"], "Succeeded");
    assert_eq!(pool["properties"]["gpuProfile"]["driver"], "Install");
    assert_eq!(
        pool["properties"]["nodeTaints"],
        json!(["nvidia.com/gpu=present:NoSchedule"])
    );
    assert_eq!(pool["properties"]["tags"]["team"], "ml");
    assert!(pool["properties"]["tags"]["gpustack.dev/creation-token"].is_string());
    assert!(out.contains("pool_id = \"/subscriptions/"), "{out}");
    let state = state_text(stack.dir.path());
    assert!(state.contains("Standard_NC4as_T4_v3"), "{state}");
    assert!(!state.contains(CLIENT_SECRET) && !state.contains("fake-access-token"));
    assert!(
        !state.contains("creation-token"),
        "the creation tag stays out of the state"
    );

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");

    // node_count is an update in place, with the capacity it adds.
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &["node_count=2"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("aks_nodepool.gpu will be updated in-place"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("~ node_count") && l.ends_with("= 1 -> 2")),
        "{out}"
    );
    super::assert_capacity_snapshot("aks-nodepool-resized", &out, "nodepool");
    // A 409 because another operation runs is waited out.
    fake.inject(Method::PUT, &[Fault::Busy, Fault::Busy]);
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &["node_count=2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(fake.pool(&pool_id).unwrap()["properties"]["count"], 2);
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &["node_count=2"]);
    assert_eq!(code, 0, "{out}{err}");

    // Scaled in the portal: drift names the field.
    fake.edit(&pool_id, |p| p["properties"]["count"] = json!(3));
    let (code, out, err) = stack.run(&["drift"], &["node_count=2"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("aks_nodepool.gpu has changed"), "{out}");
    assert!(out.contains("node_count"), "{out}");

    // vm_size cannot change in place: a replacement, with the reason.
    let a100 = "vm_size=Standard_NC24ads_A100_v4";
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &["node_count=2", a100]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("aks_nodepool.gpu must be replaced"), "{out}");
    assert!(
        out.contains("vm_size") && out.contains("forces replacement"),
        "{out}"
    );
    super::assert_capacity_snapshot("aks-nodepool-replaced", &out, "nodepool");
    // Without a rollout block, the disruption section says what AKS itself does to the nodes.
    assert!(
        out.contains(
            "rollout: none: AKS deletes the nodes with their pods, with no cordon or drain"
        ),
        "{out}"
    );
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &["node_count=2", a100]);
    assert_eq!(code, 0, "{out}{err}");
    let pool = fake.pool(&pool_id).unwrap();
    assert_eq!(pool["properties"]["vmSize"], "Standard_NC24ads_A100_v4");
    assert_eq!(fake.pools().len(), 1);

    // A pool of the same name that someone else made is not taken over.
    fake.call(
        Method::PUT,
        &format!("/subscriptions/{SUB}/resourceGroups/ml-rg/providers/Microsoft.ContainerService/managedClusters/ml-aks/agentPools/theirs?api-version=2026-08-01"),
        Some(&json!({"properties": {"vmSize": "Standard_NC4as_T4_v3", "count": 1}})),
        &[],
    );
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("main.hcl"), STACK).unwrap();
    let intruder = Stack {
        dir: other,
        fake: &fake,
    };
    let (code, out, err) = intruder.run(&["apply", "--auto-approve"], &["name=theirs"]);
    assert_eq!(code, 1, "{out}{err}");
    // Refused at plan, with the import that would take it in.
    assert!(
        err.contains("Object already exists") && err.contains("id = \"ml-rg/ml-aks/theirs\""),
        "{err}"
    );
    let theirs = fake.pool(&format!("{SUB}/ml-rg/ml-aks/theirs")).unwrap();
    assert_eq!(theirs["properties"]["count"], 1, "their pool is untouched");

    let (code, out, err) = stack.run(&["destroy", "--auto-approve"], &["node_count=2", a100]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(fake.pool(&pool_id).is_none());
}

/// kill -9 between the create of a pool and the state write: the next apply finds the pool
/// with this stack's mark and adopts it — no duplicate, and no "import it".
#[test]
fn a_pool_created_by_a_run_killed_before_recording_it_is_adopted() {
    let fake = ml_aks();
    let stack = Stack::of_one_pool(&fake);
    // The create is carried out, and its answer never comes before the kill.
    fake.inject(Method::PUT, &[Fault::Hang]);
    gpustack_tests::kill_when(stack.command(&["apply", "--auto-approve"], &[]), || {
        !fake.pools().is_empty()
    });
    gpustack_tests::force_unlock_local(stack.dir.path());
    assert!(
        !state_text(stack.dir.path()).contains("aks_nodepool.gpu"),
        "the pool is not recorded"
    );
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("adopted: this stack created it"), "{out}");
    assert!(out.contains("1 imported"), "{out}");
    assert!(!err.contains("import it"), "{err}");
    assert_eq!(fake.pools().len(), 1, "no duplicate");
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// The pool the stack made is now one without its mark, as a pool deleted and made again under
/// the same name by someone else is: the refresh finds the stack's pool gone and the plan
/// refuses to take the other one over; an apply or a destroy that skips the refresh (and so
/// still names the stack's pool) checks the mark first, and changes and deletes nothing.
#[test]
fn a_pool_made_again_by_someone_else_is_neither_adopted_nor_deleted() {
    let fake = ml_aks();
    let stack = Stack::of_one_pool(&fake);
    let pool_id = format!("{SUB}/ml-rg/ml-aks/gpu");
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let recorded = state_text(stack.dir.path());
    assert!(
        recorded.contains("\"creation_token\": \"gs-"),
        "the state records the pool's mark"
    );
    // A state written before marks were recorded is refreshed without one: no drift.
    let state_path = stack.dir.path().join(".gpustack").join("state.json");
    std::fs::write(
        &state_path,
        gpustack_tests::unrecorded(&recorded, "creation_token"),
    )
    .unwrap();
    let (code, out, err) = stack.run(&["drift"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::write(&state_path, &recorded).unwrap();
    fake.edit(&pool_id, |p| {
        p["properties"]["tags"] = json!({ "team": "theirs" });
        p["properties"]["count"] = json!(5);
    });
    let untouched = || {
        let pool = fake.pool(&pool_id).expect("their pool was deleted");
        assert_eq!(pool["properties"]["count"], 5, "their pool was changed");
        assert_eq!(pool["properties"]["tags"], json!({ "team": "theirs" }));
    };
    let flat = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");

    let (code, out, err) = stack.run(&["plan"], &[]);
    let text = flat(format!("{out}{err}"));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("Object already exists"), "{text}");
    assert!(
        text.contains("The object this stack recorded is gone (deleted outside gpustack)"),
        "{text}"
    );
    untouched();

    let (code, out, err) = stack.run(
        &["apply", "--auto-approve", "--refresh=false"],
        &["node_count=2"],
    );
    let text = flat(format!("{out}{err}"));
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("deleted and made again by someone else since it was read"),
        "{text}"
    );
    untouched();

    let (code, out, err) = stack.run(
        &["apply", "--destroy", "--auto-approve", "--refresh=false"],
        &[],
    );
    let text = flat(format!("{out}{err}"));
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("AKS node pool ml-rg/ml-aks/gpu was not deleted"),
        "{text}"
    );
    untouched();
    assert!(!state_text(stack.dir.path()).contains("aks_nodepool.gpu"));
}

/// A Terraform stack's `azurerm_kubernetes_cluster_node_pool` with its `provider "azurerm"`
/// block as AzureRM reads it (`features {}`, the service principal in the block, the cloud's
/// endpoints from `metadata_host`), on the AKS fake: an A100 pool split into MIG 1g
/// instances, planned with its capacity, applied, an empty second plan, drift when scaled in
/// the portal, and destroyed.
#[test]
fn a_terraform_azurerm_node_pool_applies_drifts_and_is_destroyed() {
    let fake = ml_aks();
    let pool_id = format!("{SUB}/ml-rg/ml-aks/a100");
    let dir = tempfile::tempdir().unwrap();
    let host = fake.endpoint.trim_start_matches("https://").to_owned();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"terraform {{
  required_providers {{
    azurerm = {{
      source  = "hashicorp/azurerm"
      version = "~> 4.0"
    }}
  }}
}}

provider "azurerm" {{
  features {{
    resource_group {{
      prevent_deletion_if_contains_resources = true
    }}
  }}
  subscription_id                 = "{SUB}"
  tenant_id                       = "{tenant}"
  client_id                       = "{client}"
  client_secret                   = "{secret}"
  metadata_host                   = "{host}"
  resource_provider_registrations = "none"
}}

resource "azurerm_kubernetes_cluster_node_pool" "a100" {{
  name                  = "a100"
  kubernetes_cluster_id = "/subscriptions/{SUB}/resourceGroups/ml-rg/providers/Microsoft.ContainerService/managedClusters/ml-aks"
  vm_size               = "Standard_NC24ads_A100_v4"
  node_count            = 2
  gpu_instance          = "MIG1g"
  node_labels = {{
    "gpustack.dev/pool" = "a100"
  }}
  node_taints = ["sku=gpu:NoSchedule"]
  tags = {{
    team = "ml"
  }}
}}
"#,
            tenant = gpustack_tests::aks::TENANT,
            client = gpustack_tests::aks::CLIENT_ID,
            secret = gpustack_tests::aks::CLIENT_SECRET,
        ),
    )
    .unwrap();
    // The fake's CA and authority, but the service principal only in the provider block.
    let env: Vec<(String, String)> = fake
        .env()
        .into_iter()
        .filter(|(k, _)| {
            !["AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID", "AZURE_TENANT_ID"].contains(&k.as_str())
        })
        .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = |args: &[&str]| {
        let output = gpustack_tests::gpustack_command(dir.path(), args, &env)
            .output()
            .unwrap();
        let (out, err) = (stdout(&output), stderr(&output));
        assert!(
            !out.contains(gpustack_tests::aks::CLIENT_SECRET)
                && !err.contains(gpustack_tests::aks::CLIENT_SECRET),
            "the client secret reached the output:\n{out}{err}"
        );
        (output.status.code().unwrap_or(-1), out, err)
    };

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    let lines = super::capacity_lines(&out, "nodepool a100");
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("nodepool a100: 2 × Standard_NC24ads_A100_v4 (1× A100) → nvidia.com/gpu 2 → 14 (MIG 1g.10gb ×7; new pool;"),
        "{out}"
    );
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let live = fake.pool(&pool_id).unwrap();
    assert_eq!(live["properties"]["vmSize"], "Standard_NC24ads_A100_v4");
    assert_eq!(live["properties"]["gpuInstanceProfile"], "MIG1g");
    assert_eq!(live["properties"]["count"], 2);
    assert_eq!(live["properties"]["nodeTaints"][0], "sku=gpu:NoSchedule");
    // The data source reads the pool back, in the AzureRM provider's schema.
    std::fs::write(
        dir.path().join("read.tf"),
        "data \"azurerm_kubernetes_cluster_node_pool\" \"read\" {\n  name                    = \"a100\"\n  kubernetes_cluster_name = \"ml-aks\"\n  resource_group_name     = \"ml-rg\"\n}\n\noutput \"read_vm_size\" {\n  value = data.azurerm_kubernetes_cluster_node_pool.read.vm_size\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, read, err) = run(&["output", "-raw", "read_vm_size"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(read.trim(), "Standard_NC24ads_A100_v4");

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");

    fake.edit(&pool_id, |p| p["properties"]["count"] = json!(3));
    let (code, out, err) = run(&["drift"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("azurerm_kubernetes_cluster_node_pool.a100 has changed")
            && out.contains("node_count"),
        "{out}"
    );

    let (code, out, err) = run(&["destroy", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(fake.pool(&pool_id).is_none());
}
