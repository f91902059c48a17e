//! Stacks and documents of hostile *shape* rather than hostile bytes: long chains (locals,
//! resources, variables through modules, `depends_on`), deep nesting (HCL, JSON, YAML in
//! block and flow style), aliases that expand (nested anchors, one long scalar named many
//! times, over several documents) and Terraform JSON plans, built from a few fuzzed
//! parameters, then loaded, graphed and evaluated with every decoder that reads them
//! (`yamldecode`, `jsondecode`, the kubernetes provider's manifest functions, a
//! `kubectl_manifest` body, a `helm_release`'s values, `terraform_remote_state`, `gpustack
//! review`).
//! Nothing may panic, abort, overflow the stack, hang or exhaust memory: each shape either
//! works or stops at a named limit.
#![no_main]

use gpustack_engine::{EvalOptions, VariableArgs};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

#[derive(Debug, Arbitrary)]
enum Shape {
    /// `local.lN = local.lN-1 <op> ...`
    Locals { length: u16, op: u8 },
    /// `terraform_data.rN` each taking the previous one's output, or `depends_on` it.
    Resources { length: u16, depends_on: bool },
    /// A value passed down nested module calls and back up through their outputs.
    Modules { depth: u8 },
    /// HCL brackets, parentheses, objects or template interpolations nested in one value.
    NestedHcl { depth: u16, kind: u8 },
    /// A JSON document nested in arrays or objects, for `jsondecode` and `.tf.json`.
    NestedJson { depth: u16, objects: bool, as_stack: bool },
    /// A YAML document nested in block or flow style.
    NestedYaml { depth: u16, flow: bool },
    /// Anchors each naming the previous one `fan` times ("billion laughs").
    Aliases { levels: u8, fan: u8, merge: bool },
    /// A Terraform state with outputs and resources nested or of odd shapes.
    TerraformState { depth: u16, outputs: u16, odd: u8 },
    /// YAML documents whose aliases expand, read by one of [`YAML_READERS`].
    YamlBody { body: YamlBody, reader: u8 },
    /// A Terraform JSON plan for `gpustack review`: changes of the types the kubernetes,
    /// kubectl and helm providers review, their values nested, their YAML bodies expanding,
    /// or their fields of odd shapes.
    ReviewPlan { changes: u16, depth: u16, body: YamlBody, odd: u8 },
}

#[derive(Debug, Arbitrary)]
enum YamlBody {
    /// In each document, anchors each naming the previous one `fan` times.
    Laughs { documents: u8, levels: u8, fan: u8, merge: bool },
    /// In each document, one anchored scalar of `kib` KiB named by `aliases` aliases.
    LongScalar { documents: u8, kib: u16, aliases: u16 },
}

impl YamlBody {
    /// The documents, each a ConfigMap so that every reader takes it for an object. Each
    /// document's text stays under 4 MiB in all: what its aliases expand to is the test.
    fn documents(&self) -> Vec<String> {
        let head = |i: usize| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a{i}\ndata:\n");
        match *self {
            YamlBody::Laughs { documents, levels, fan, merge } => {
                let (levels, fan) = (usize::from(levels) % 24, usize::from(fan) % 16 + 1);
                (0..usize::from(documents) % 16 + 1)
                    .map(|i| {
                        let mut doc = head(i);
                        doc.push_str(if merge { "  a0: &a0 {lol: lol}\n" } else { "  a0: &a0 [\"lol\"]\n" });
                        for l in 1..=levels {
                            let named = vec![format!("*a{}", l - 1); fan].join(", ");
                            if merge {
                                let _ = writeln!(doc, "  a{l}: &a{l}\n    <<: [{named}]");
                            } else {
                                let _ = writeln!(doc, "  a{l}: &a{l} [{named}]");
                            }
                        }
                        doc
                    })
                    .collect()
            }
            YamlBody::LongScalar { documents, kib, aliases } => {
                let documents = usize::from(documents) % 16 + 1;
                let scalar = "x".repeat((usize::from(kib) % (4096 / documents)) << 10);
                let named = vec!["*x"; usize::from(aliases) % 20_000].join(", ");
                (0..documents)
                    .map(|i| format!("{}  x: &x \"{scalar}\"\n  y: [{named}]\n", head(i)))
                    .collect()
            }
        }
    }
}

/// How a [`Shape::YamlBody`] is read: `doc.yaml` holds all its documents, `first.yaml` the
/// first.
const YAML_READERS: [&str; 5] = [
    "output \"x\" {\n  value = yamldecode(file(\"first.yaml\"))\n}\n",
    "output \"x\" {\n  value = provider::kubernetes::manifest_decode(file(\"first.yaml\"))\n}\n",
    "output \"x\" {\n  value = provider::kubernetes::manifest_decode_multi(file(\"doc.yaml\"))\n}\n",
    "resource \"kubectl_manifest\" \"m\" {\n  yaml_body = file(\"first.yaml\")\n}\n",
    "resource \"helm_release\" \"r\" {\n  name       = \"x\"\n  repository = \"https://example.invalid/charts\"\n  chart      = \"gpu-operator\"\n  version    = \"1.0.0\"\n  values     = split(\"---\\n\", file(\"doc.yaml\"))\n}\n",
];

/// A Terraform JSON plan of `changes` changes, cycling through the types the providers
/// review. Only the first change of each type carries the YAML body, and values nest past
/// serde_json's limit of 128 but no further, so that the plan stays some megabytes: a plan
/// of gigabytes only tests the size limit, and writing it would take the whole timeout.
fn review_plan(changes: u16, depth: u16, body: &YamlBody, odd: u8) -> String {
    let depth = usize::from(depth) % 300;
    let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let documents = body.documents();
    let first = serde_json::to_string(&documents[0]).unwrap_or_default();
    let all = serde_json::to_string(&documents).unwrap_or_default();
    let limits = format!("{{\"nvidia.com/gpu\": {nested}}}");
    let helm = |values: &str| format!("{{\"name\": \"gpu-operator\", \"chart\": \"gpu-operator\", \"repository\": \"https://helm.ngc.nvidia.com/nvidia\", \"values\": {values}, \"set\": [{{\"name\": \"driver.enabled\", \"value\": {nested}}}]}}");
    let small = [
        ("kubectl_manifest", "{\"yaml_body\": \"apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: s\\n\"}".to_owned()),
        ("helm_release", helm("[\"driver:\\n  enabled: true\\n\"]")),
    ];
    let afters = [
        ("kubectl_manifest", format!("{{\"yaml_body\": {first}}}")),
        ("helm_release", helm(&all)),
        ("kubernetes_manifest", format!("{{\"manifest\": {{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {{\"name\": \"d\"}}, \"spec\": {{\"template\": {{\"spec\": {{\"containers\": [{{\"name\": \"c\", \"resources\": {{\"limits\": {limits}}}}}]}}}}}}}}}}")),
        ("kubernetes_deployment_v1", format!("{{\"metadata\": [{{\"name\": \"d\"}}], \"spec\": [{{\"template\": [{{\"spec\": [{{\"container\": [{{\"name\": \"c\", \"resources\": [{{\"limits\": {limits}}}]}}]}}]}}]}}]}}")),
        ("kubernetes_labels", format!("{{\"api_version\": \"v1\", \"kind\": \"Node\", \"metadata\": [{{\"name\": \"n\"}}], \"labels\": {{\"nvidia.com/mig.config\": {nested}}}}}")),
    ];
    let mut out = String::from("{\"format_version\": \"1.2\", \"resource_changes\": [");
    for i in 0..usize::from(changes) % 2_000 {
        if i > 0 {
            out.push(',');
        }
        let (type_name, after) = match afters.get(i) {
            None if i % afters.len() < small.len() => &small[i % afters.len()],
            _ => &afters[i % afters.len()],
        };
        let change = match odd % 6 {
            0 => format!("\"actions\": [\"create\"], \"before\": null, \"after\": {after}"),
            1 => format!("\"actions\": [\"update\"], \"before\": {after}, \"after\": {after}, \"after_unknown\": {nested}"),
            2 => format!("\"actions\": [\"create\"], \"after\": {after}, \"after_sensitive\": {after}"),
            3 => format!("\"actions\": [\"delete\", \"create\"], \"before\": {after}, \"after\": {after}, \"before_sensitive\": true"),
            4 => format!("\"actions\": [\"delete\"], \"before\": {after}, \"after\": null"),
            _ => format!("\"actions\": [\"create\"], \"after\": {{\"yaml_body\": {nested}, \"values\": {nested}, \"manifest\": \"x\", \"metadata\": 5}}"),
        };
        let _ = write!(out, "{{\"address\": \"{type_name}.r{i}\", \"mode\": \"managed\", \"type\": \"{type_name}\", \"name\": \"r{i}\", \"change\": {{{change}}}}}");
    }
    out.push_str("]}");
    out
}

fn stack_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir()
            .join(format!("gpustack-fuzz-shapes-{}", std::process::id()))
            .join("stack");
        std::fs::create_dir_all(&dir).expect("create fuzz stack dir");
        dir
    })
}

const KUBERNETES: &str = "terraform {\n  required_providers {\n    kubernetes = {\n      source = \"hashicorp/kubernetes\"\n    }\n    kubectl = {\n      source = \"gavinbunney/kubectl\"\n    }\n  }\n}\n";

/// The stack's files for a shape: (path, text).
fn files(shape: &Shape) -> Vec<(String, String)> {
    let mut files = Vec::new();
    match *shape {
        Shape::Locals { length, op } => {
            let op = ["", " + 1", " * 1", " == 1 ? 1 : 0", " != null ? 1 : 0"][usize::from(op) % 5];
            let mut text = String::from("locals {\n  l0 = 1\n");
            for i in 1..=u32::from(length) {
                let _ = writeln!(text, "  l{i} = local.l{}{op}", i - 1);
            }
            let _ = writeln!(text, "}}\noutput \"x\" {{\n  value = local.l{length}\n}}");
            files.push(("main.hcl".into(), text));
        }
        Shape::Resources { length, depends_on } => {
            let length = u32::from(length) % 20_000;
            let mut text = String::from("resource \"terraform_data\" \"r0\" {\n  input = 1\n}\n");
            for i in 1..=length {
                if depends_on {
                    let _ = writeln!(text, "resource \"terraform_data\" \"r{i}\" {{\n  depends_on = [terraform_data.r{}]\n}}", i - 1);
                } else {
                    let _ = writeln!(text, "resource \"terraform_data\" \"r{i}\" {{\n  input = terraform_data.r{}.output\n}}", i - 1);
                }
            }
            files.push(("main.tf".into(), text));
        }
        Shape::Modules { depth } => {
            let depth = u32::from(depth) % 48;
            files.push(("main.hcl".into(), "module \"m\" {\n  source = \"./m1\"\n  v      = 1\n}\noutput \"x\" {\n  value = module.m.v\n}\n".into()));
            for i in 1..=depth {
                let dir = format!("m{i}");
                let call = if i < depth {
                    format!("module \"m\" {{\n  source = \"../m{}\"\n  v      = var.v\n}}\noutput \"v\" {{\n  value = module.m.v\n}}\n", i + 1)
                } else {
                    "output \"v\" {\n  value = var.v\n}\n".into()
                };
                files.push((format!("{dir}/main.hcl"), format!("variable \"v\" {{}}\n{call}")));
            }
        }
        Shape::NestedHcl { depth, kind } => {
            let depth = usize::from(depth);
            let (open, close) = [("[", "]"), ("(", ")"), ("{a = ", "}"), ("\"${", "}\"")]
                [usize::from(kind) % 4];
            let value = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            files.push(("main.hcl".into(), format!("output \"x\" {{\n  value = {value}\n}}\n")));
        }
        Shape::NestedJson { depth, objects, as_stack } => {
            let depth = usize::from(depth);
            let doc = if objects {
                format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
            } else {
                format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
            };
            if as_stack {
                files.push(("main.tf.json".into(), format!("{{\"locals\": {{\"x\": {doc}}}}}")));
            } else {
                files.push(("doc.json".into(), doc));
                files.push(("main.hcl".into(), "output \"x\" {\n  value = jsondecode(file(\"${path.module}/doc.json\"))\n}\n".into()));
            }
        }
        Shape::NestedYaml { depth, flow } => {
            let depth = usize::from(depth);
            let doc = if flow {
                format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
            } else {
                // Block style indents every level, so its size grows with the square of the depth:
                // capped where the document is still a few megabytes, far past the decoders'
                // nesting limit, so the input's own size is not what runs out of memory.
                let depth = depth % 3_000;
                let mut doc: String = (0..depth).map(|i| format!("{}k:\n", "  ".repeat(i))).collect();
                let _ = writeln!(doc, "{}v", "  ".repeat(depth));
                doc
            };
            files.push(("doc.yaml".into(), doc));
            files.push(("main.tf".into(), format!("{KUBERNETES}output \"x\" {{\n  value = yamldecode(file(\"${{path.module}}/doc.yaml\"))\n}}\noutput \"y\" {{\n  value = provider::kubernetes::manifest_decode_multi(file(\"${{path.module}}/doc.yaml\"))\n}}\n")));
        }
        Shape::Aliases { levels, fan, merge } => {
            let (levels, fan) = (usize::from(levels) % 24, usize::from(fan) % 16 + 1);
            let mut doc = String::from("a0: &a0 [\"lol\"]\n");
            for i in 1..=levels {
                if merge {
                    let _ = writeln!(doc, "a{i}: &a{i}\n  <<: [{}]", vec![format!("*a{}", i - 1); fan].join(", "));
                } else {
                    let _ = writeln!(doc, "a{i}: &a{i} [{}]", vec![format!("*a{}", i - 1); fan].join(", "));
                }
            }
            files.push(("doc.yaml".into(), doc));
            files.push(("main.tf".into(), format!("{KUBERNETES}output \"x\" {{\n  value = length(yamldecode(file(\"${{path.module}}/doc.yaml\")))\n}}\noutput \"y\" {{\n  value = provider::kubernetes::manifest_decode(file(\"${{path.module}}/doc.yaml\"))\n}}\n")));
        }
        Shape::TerraformState { depth, outputs, odd } => {
            let depth = usize::from(depth);
            let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let mut outs = String::new();
            for i in 0..u32::from(outputs) % 2000 {
                if i > 0 {
                    outs.push(',');
                }
                let _ = write!(outs, "\"o{i}\": {{\"value\": {nested}, \"type\": \"dynamic\"}}");
            }
            let state = match odd % 4 {
                0 => format!("{{\"version\": 4, \"outputs\": {{{outs}}}}}"),
                1 => format!("{{\"version\": 4, \"outputs\": [{nested}]}}"),
                2 => format!("{{\"version\": 4, \"resources\": {nested}}}"),
                _ => format!("{{\"version\": {nested}}}"),
            };
            files.push(("tf.tfstate".into(), state));
            files.push(("main.tf".into(), "data \"terraform_remote_state\" \"s\" {\n  backend = \"local\"\n  config = {\n    path = \"tf.tfstate\"\n  }\n}\noutput \"x\" {\n  value = data.terraform_remote_state.s.outputs\n}\n".into()));
        }
        Shape::YamlBody { ref body, reader } => {
            let documents = body.documents();
            files.push(("first.yaml".into(), documents[0].clone()));
            files.push(("doc.yaml".into(), documents.join("---\n")));
            let reader = YAML_READERS[usize::from(reader) % YAML_READERS.len()];
            files.push(("main.tf".into(), format!("{KUBERNETES}{reader}")));
        }
        Shape::ReviewPlan { changes, depth, ref body, odd } => {
            files.push(("plan.json".into(), review_plan(changes, depth, body, odd)));
            // The stack the findings are located in.
            files.push(("main.tf".into(), format!("{KUBERNETES}{}", YAML_READERS[3])));
        }
    }
    files
}

/// The providers whose validation and review need no cluster: those without an SDK, and
/// the kubernetes, kubectl, gpu and helm providers, whose decoders read stack text.
fn registry() -> gpustack_protocol::Registry {
    gpustack_protocol::Registry::new(vec![
        gpustack_provider_local::provider(),
        gpustack_provider_local::terraform::provider(),
        gpustack_provider_test::provider(),
        gpustack_provider_kubernetes::kubernetes(),
        gpustack_provider_kubernetes::kubectl(),
        gpustack_provider_kubernetes::gpu(),
        gpustack_provider_helm::provider(),
    ])
}

fuzz_target!(|shape: Shape| {
    // Each input is a run of its own: the values earlier inputs built are gone.
    gpustack_lang::expr::eval::start_run();
    let dir = stack_dir();
    let _ = std::fs::remove_dir_all(dir);
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    for (name, text) in files(&shape) {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if std::fs::write(path, text).is_err() {
            return;
        }
    }
    if std::env::set_current_dir(dir).is_err() {
        return;
    }
    if matches!(shape, Shape::ReviewPlan { .. }) {
        let _ = gpustack_engine::review(&registry(), &dir.join("plan.json"), Some(dir), None);
        return;
    }
    let loaded = gpustack_engine::load(
        registry(),
        dir,
        &VariableArgs::default(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    let _ = loaded.graph_dot();
    // Data sources are read at plan, not at load: the state's reader directly.
    if let Ok(bytes) = std::fs::read(dir.join("tf.tfstate"))
        && let Ok(state) = gpustack_state::terraform::parse("tf.tfstate", &bytes)
    {
        let _ = state.managed_instances();
    }
});
