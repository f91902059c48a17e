//! NVIDIA device-plugin configs (`version: v1`, GPU-FACTS "Device-plugin sharing config"): what
//! one key of the ConfigMap makes each physical GPU (or MIG device) advertise, and what in it
//! the plugin would refuse or silently ignore.

use gpustack_protocol::{Path, PathStep};
use serde_json::Value as Json;

/// How a config shares each device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    TimeSlicing,
    Mps,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::TimeSlicing => "time-slicing",
            Strategy::Mps => "MPS",
        }
    }
}

/// One shared resource: `nvidia.com/gpu` or a MIG resource, and its replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    pub resource: String,
    pub replicas: f64,
    /// Advertised under `<resource>.shared`.
    pub rename: bool,
}

/// One key of a device-plugin config.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PluginConfig {
    /// `flags.migStrategy`, when set.
    pub mig_strategy: Option<String>,
    pub strategy: Option<Strategy>,
    pub shared: Vec<Shared>,
}

impl PluginConfig {
    /// The replicas of a resource under this config (1 when it is not shared) and whether it is
    /// renamed.
    pub fn replicas_of(&self, resource: &str) -> (f64, bool) {
        self.shared
            .iter()
            .find(|s| s.resource == resource)
            .map_or((1.0, false), |s| (s.replicas, s.rename))
    }

    /// `time-slicing ×10`, `MPS ×4`, `no sharing`.
    pub fn describe(&self) -> String {
        match (self.strategy, self.shared.first()) {
            (Some(strategy), Some(first)) if self.shared.len() == 1 => format!(
                "{} ×{}",
                strategy.name(),
                gpustack_protocol::format_number(first.replicas)
            ),
            (Some(strategy), _) => strategy.name().to_owned(),
            _ => "no sharing".to_owned(),
        }
    }
}

/// Something in a config the device plugin refuses, or ignores while the config pretends.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Where in the config document.
    pub path: Path,
    pub summary: String,
    pub detail: String,
}

fn key(k: &str) -> PathStep {
    PathStep::Key(k.to_owned())
}

/// Reads one key of a device-plugin ConfigMap; `None` when the text is not a device-plugin
/// config at all (another kind of ConfigMap).
pub fn parse(text: &str) -> Option<(PluginConfig, Vec<Problem>)> {
    let doc: Json = serde_yaml_ng::from_str(text).ok()?;
    if doc.get("version")?.as_str()? != "v1"
        || (doc.get("sharing").is_none() && doc.get("flags").is_none())
    {
        return None;
    }
    let mut problems = Vec::new();
    let mut config = PluginConfig {
        mig_strategy: doc
            .pointer("/flags/migStrategy")
            .and_then(Json::as_str)
            .map(str::to_owned),
        ..PluginConfig::default()
    };
    let policies: Vec<(Strategy, &str, &Json)> = [
        (Strategy::TimeSlicing, "timeSlicing"),
        (Strategy::Mps, "mps"),
    ]
    .into_iter()
    .filter_map(|(s, name)| Some((s, name, doc.pointer(&format!("/sharing/{name}"))?)))
    .filter(|(_, _, policy)| !policy.is_null())
    .collect();
    if policies.len() > 1 {
        problems.push(Problem {
            path: vec![key("sharing"), key("mps")],
            summary: "Time-slicing and MPS in one config".into(),
            detail: "A device-plugin config shares GPUs one way: sharing.timeSlicing and sharing.mps exclude each other. Put them under different keys and pick one per node with the nvidia.com/device-plugin.config label.".into(),
        });
    }
    if let Some((strategy, name, policy)) = policies.first() {
        config.strategy = Some(*strategy);
        let base = vec![key("sharing"), key(name)];
        let rename_default = policy.get("renameByDefault").and_then(Json::as_bool) == Some(true);
        let resources = policy
            .get("resources")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        if resources.is_empty() {
            problems.push(Problem {
                path: [base.clone(), vec![key("resources")]].concat(),
                summary: "Sharing without resources".into(),
                detail: format!(
                    "sharing.{name}.resources is empty: the plugin shares nothing. List at least {{name: nvidia.com/gpu, replicas: N}}."
                ),
            });
        }
        for (i, resource) in resources.iter().enumerate() {
            let at = |field: &str| {
                [
                    base.clone(),
                    vec![key("resources"), PathStep::Index(i), key(field)],
                ]
                .concat()
            };
            let resource_name = resource
                .get("name")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_owned();
            let replicas = resource.get("replicas").and_then(Json::as_f64);
            match replicas {
                Some(r) if r >= 2.0 && r.fract() == 0.0 => {}
                _ => problems.push(Problem {
                    path: at("replicas"),
                    summary: "Sharing replicas below 2".into(),
                    detail: format!(
                        "{resource_name} has replicas {}: the device plugin shares a GPU between at least 2 replicas (a whole number); 1 is no sharing, so leave sharing out instead.",
                        replicas.map_or_else(|| "unset".to_owned(), gpustack_protocol::format_number)
                    ),
                }),
            }
            for field in ["rename", "devices"] {
                if resource.get(field).is_some() {
                    problems.push(Problem {
                        path: at(field),
                        summary: format!("Per-resource {field} is ignored"),
                        detail: format!(
                            "The device plugin ignores resources[].{field} in a sharing config; it would share every GPU under its own name. Use renameByDefault for the name, and a per-node config key (nvidia.com/device-plugin.config) to share only some nodes."
                        ),
                    });
                }
            }
            let mig_resource = resource_name.starts_with("nvidia.com/mig-");
            if *strategy == Strategy::Mps && mig_resource {
                problems.push(Problem {
                    path: at("name"),
                    summary: "MPS on a MIG device".into(),
                    detail: format!(
                        "MPS shares only full GPUs (nvidia.com/gpu), never MIG devices like {resource_name}; time-slicing shares MIG devices of the mixed strategy."
                    ),
                });
            }
            config.shared.push(Shared {
                resource: resource_name,
                replicas: replicas.unwrap_or(1.0),
                rename: rename_default,
            });
        }
        if *strategy == Strategy::Mps && config.mig_strategy.as_deref().is_some_and(|s| s != "none")
        {
            problems.push(Problem {
                path: vec![key("flags"), key("migStrategy")],
                summary: "MPS with MIG".into(),
                detail: format!(
                    "MPS never runs with MIG: this config shares with MPS under migStrategy {}. Use migStrategy none for MPS, or time-slicing for MIG devices.",
                    config.mig_strategy.as_deref().unwrap_or_default()
                ),
            });
        }
    }
    Some((config, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(text: &str) -> Vec<String> {
        parse(text)
            .expect("a device-plugin config")
            .1
            .into_iter()
            .map(|p| format!("{} at {}", p.summary, gpustack_protocol::path_text(&p.path)))
            .collect()
    }

    #[test]
    fn reads_time_slicing_mps_and_plain_configs() {
        let ts = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n";
        let (config, problems) = parse(ts).unwrap();
        assert!(problems.is_empty());
        assert_eq!(config.describe(), "time-slicing ×10");
        assert_eq!(config.replicas_of("nvidia.com/gpu"), (10.0, false));
        let mps = "version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";
        assert_eq!(
            parse(mps).unwrap().0.replicas_of("nvidia.com/gpu"),
            (4.0, true)
        );
        let plain = parse("version: v1\nflags:\n  migStrategy: none\n")
            .unwrap()
            .0;
        assert_eq!(plain.describe(), "no sharing");
        assert_eq!(plain.replicas_of("nvidia.com/gpu"), (1.0, false));
        assert_eq!(parse("a: b"), None);
        assert_eq!(parse("not: [yaml"), None);
    }

    #[test]
    fn finds_what_the_plugin_refuses_or_ignores() {
        assert_eq!(
            summaries(
                "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n      rename: x\n"
            ),
            [
                "Sharing replicas below 2 at sharing.timeSlicing.resources[0].replicas",
                "Per-resource rename is ignored at sharing.timeSlicing.resources[0].rename"
            ]
        );
        assert_eq!(
            summaries(
                "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n"
            ),
            [
                "MPS on a MIG device at sharing.mps.resources[0].name",
                "MPS with MIG at flags.migStrategy"
            ]
        );
        assert_eq!(
            summaries(
                "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
            ),
            ["Time-slicing and MPS in one config at sharing.mps"]
        );
        // Whether a MIG resource exists is the ClusterPolicy's mig.strategy: the model checks it.
        assert!(
            summaries("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n")
                .is_empty()
        );
    }
}
