//! MIG: mig-parted's config (`version: v1`, `mig-configs`) and what the MIG manager does with
//! a node's `nvidia.com/mig.config` label: a layout valid for the node's GPU, or failure.

use super::catalog::GpuModel;
use indexmap::IndexMap;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigStrategy {
    None,
    #[default]
    Single,
    Mixed,
}

impl MigStrategy {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Self::None),
            "single" => Some(Self::Single),
            "mixed" => Some(Self::Mixed),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Single => "single",
            Self::Mixed => "mixed",
        }
    }
}

/// The MIG devices each GPU of a node is split into (profile → count per GPU).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MigLayout {
    pub devices: IndexMap<String, u32>,
}

#[derive(Debug, Clone, Deserialize)]
struct Entry {
    #[serde(rename = "device-filter", default)]
    device_filter: Option<serde_yaml_ng::Value>,
    #[serde(rename = "mig-enabled")]
    mig_enabled: bool,
    #[serde(rename = "mig-devices", default)]
    mig_devices: IndexMap<String, u32>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawConfigs {
    version: String,
    #[serde(rename = "mig-configs")]
    mig_configs: IndexMap<String, Vec<Entry>>,
}

/// A parsed mig-parted config: the geometries a node can ask for by name.
#[derive(Debug, Clone)]
pub struct MigConfigs {
    configs: IndexMap<String, Vec<Entry>>,
}

impl MigConfigs {
    /// Parses a mig-parted config, given either as its YAML or as the ConfigMap that holds it
    /// under `config.yaml` (as the operator's default config is shipped).
    pub fn parse(text: &str) -> Result<Self, String> {
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(text).map_err(|e| format!("invalid mig-parted config: {e}"))?;
        let inner = yaml
            .get("data")
            .and_then(|d| d.get("config.yaml"))
            .and_then(|c| c.as_str());
        let raw: RawConfigs = match inner {
            Some(config) => serde_yaml_ng::from_str(config),
            None => serde_yaml_ng::from_value(yaml),
        }
        .map_err(|e| format!("invalid mig-parted config: {e}"))?;
        if raw.version != "v1" {
            return Err(format!(
                "unknown mig-parted config version {:?}",
                raw.version
            ));
        }
        Ok(Self {
            configs: raw.mig_configs,
        })
    }

    /// The layout the named config gives this GPU model; the error is why the MIG manager
    /// would set `nvidia.com/mig.config.state=failed`.
    pub fn layout_for(&self, name: &str, model: &GpuModel) -> Result<MigLayout, String> {
        let entries = self
            .configs
            .get(name)
            .ok_or_else(|| format!("no MIG config named {name:?}"))?;
        let applicable: Vec<&Entry> = entries
            .iter()
            .filter(|e| matches_device(e, model))
            .collect();
        let Some(entry) = applicable.first() else {
            return Err(format!(
                "MIG config {name:?} has nothing for {}",
                model.product
            ));
        };
        if !entry.mig_enabled {
            return Ok(MigLayout::default());
        }
        if model.mig_profiles.is_empty() {
            return Err(format!("{} does not support MIG", model.product));
        }
        let mut compute_slices = 0;
        for (profile, count) in &entry.mig_devices {
            let max = model
                .max_instances(profile)
                .ok_or_else(|| format!("{} has no MIG profile {profile}", model.product))?;
            if *count > max {
                return Err(format!(
                    "{} fits at most {max} × {profile}, not {count}",
                    model.product
                ));
            }
            let slices: u32 = profile
                .split('g')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(7);
            compute_slices += slices * count;
        }
        if compute_slices > 7 {
            return Err(format!(
                "MIG config {name:?} needs {compute_slices} of the 7 compute slices of a {}",
                model.product
            ));
        }
        Ok(MigLayout {
            devices: entry.mig_devices.clone(),
        })
    }
}

/// The per-node config MIG Manager generates from NVML since GPU Operator v26.3.0 (the
/// ConfigMap `<node>-mig-config`): the geometries the node's own GPU supports, without device
/// filters — `all-disabled`, `all-enabled`, `all-<profile>` at the most each GPU holds, and
/// `all-balanced` (two of the smallest, one 2g and one 3g instance) where the GPU has those.
pub fn generated_config(model: &GpuModel) -> String {
    let mut configs: Vec<(String, String)> = vec![
        (
            "all-disabled".into(),
            "  - devices: all\n    mig-enabled: false\n".into(),
        ),
        (
            "all-enabled".into(),
            "  - devices: all\n    mig-enabled: true\n    mig-devices: {}\n".into(),
        ),
    ];
    let devices = |pairs: &[(&str, u32)]| {
        let mut text = "  - devices: all\n    mig-enabled: true\n    mig-devices:\n".to_owned();
        for (profile, count) in pairs {
            text.push_str(&format!("      \"{profile}\": {count}\n"));
        }
        text
    };
    for (profile, max) in model.mig_profiles {
        configs.push((format!("all-{profile}"), devices(&[(profile, *max)])));
    }
    let first = |prefix: &str| {
        model
            .mig_profiles
            .iter()
            .map(|(p, _)| *p)
            .find(|p| p.starts_with(prefix))
    };
    if let (Some(one), Some(two), Some(three)) = (first("1g."), first("2g."), first("3g.")) {
        configs.push((
            "all-balanced".into(),
            devices(&[(one, 2), (two, 1), (three, 1)]),
        ));
    }
    let mut text = "version: v1\nmig-configs:\n".to_owned();
    for (name, body) in configs {
        text.push_str(&format!("  {name}:\n{body}"));
    }
    text
}

fn matches_device(entry: &Entry, model: &GpuModel) -> bool {
    match &entry.device_filter {
        None => true,
        Some(serde_yaml_ng::Value::String(id)) => id.eq_ignore_ascii_case(model.device_id),
        Some(serde_yaml_ng::Value::Sequence(ids)) => ids.iter().any(|id| {
            id.as_str()
                .is_some_and(|id| id.eq_ignore_ascii_case(model.device_id))
        }),
        Some(_) => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gpusim::catalog::model;

    /// NVIDIA's default geometries, read from the upstream data (never copied here).
    pub(crate) fn default_config_path() -> std::path::PathBuf {
        crate::upstream("nvidia/default-mig-parted-config.yaml")
    }

    fn defaults() -> MigConfigs {
        MigConfigs::parse(
            &std::fs::read_to_string(default_config_path()).expect("the upstream data is present"),
        )
        .unwrap()
    }

    #[test]
    fn nvidia_defaults_give_each_model_its_geometry() {
        let configs = defaults();
        let a100_80 = model("NVIDIA-A100-SXM4-80GB").unwrap();
        assert_eq!(
            configs.layout_for("all-1g.10gb", a100_80).unwrap().devices["1g.10gb"],
            7
        );
        let balanced = configs.layout_for("all-balanced", a100_80).unwrap();
        assert_eq!(balanced.devices.get("3g.40gb"), Some(&1));
        assert_eq!(
            configs.layout_for("all-disabled", a100_80).unwrap(),
            MigLayout::default()
        );
    }

    #[test]
    fn the_generated_per_node_config_holds_the_gpus_own_geometries() {
        let a100 = model("NVIDIA-A100-SXM4-40GB").unwrap();
        let configs = MigConfigs::parse(&generated_config(a100)).unwrap();
        assert_eq!(
            configs.layout_for("all-1g.5gb", a100).unwrap().devices["1g.5gb"],
            7
        );
        let balanced = configs.layout_for("all-balanced", a100).unwrap();
        assert_eq!(balanced.devices.get("1g.5gb"), Some(&2));
        assert_eq!(balanced.devices.get("3g.20gb"), Some(&1));
        assert_eq!(
            configs.layout_for("all-disabled", a100).unwrap(),
            MigLayout::default()
        );
        assert!(configs.layout_for("all-1g.10gb", a100).is_ok());
        assert!(configs.layout_for("all-1g.18gb", a100).is_err());
    }

    #[test]
    fn invalid_geometries_fail() {
        let configs = defaults();
        let a100_40 = model("NVIDIA-A100-SXM4-40GB").unwrap();
        // NVIDIA's all-1g.10gb has an entry of its own for the A100-40GB (4 × 1g.10gb)...
        assert_eq!(
            configs.layout_for("all-1g.10gb", a100_40).unwrap().devices["1g.10gb"],
            4
        );
        // ...while seven of them, as on an 80 GB GPU, do not fit.
        let seven = MigConfigs::parse("version: v1\nmig-configs:\n  seven:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 7\n").unwrap();
        assert!(
            seven
                .layout_for("seven", a100_40)
                .unwrap_err()
                .contains("at most 4")
        );
        let t4 = model("Tesla-T4").unwrap();
        assert!(
            configs
                .layout_for("all-1g.5gb", t4)
                .unwrap_err()
                .contains("does not support MIG")
        );
        assert!(configs.layout_for("no-such-config", t4).is_err());
        let custom = MigConfigs::parse("version: v1\nmig-configs:\n  too-big:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": 2\n        \"2g.20gb\": 1\n").unwrap();
        assert!(
            custom
                .layout_for("too-big", model("NVIDIA-H100-80GB-HBM3").unwrap())
                .unwrap_err()
                .contains("compute slices")
        );
    }
}
