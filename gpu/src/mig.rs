//! MIG geometries: mig-parted config sets (`version: v1`, `mig-configs`) and what a geometry
//! makes of one GPU (GPU-FACTS "MIG").

use crate::catalog;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// MIG instances per GPU by profile; empty: MIG enabled with no instances. `None` in
/// [`Layout::devices`] would be MIG disabled, which is [`Layout::Disabled`].
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    Disabled,
    Enabled(BTreeMap<String, u32>),
}

/// Where a geometry's layout came from, for the capacity line.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// A mig-parted config set on the cluster or in the plan.
    ConfigMap,
    /// gpustack's copy of NVIDIA's `all-*` geometries (no config set to read).
    BuiltIn,
}

/// A mig-parted config set: geometry name → its entries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConfigSet {
    geometries: BTreeMap<String, Vec<Entry>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    enabled: bool,
    devices: BTreeMap<String, u32>,
    /// `device-filter` present: the entry is for some GPU models only.
    filtered: bool,
}

impl ConfigSet {
    /// Reads a mig-parted config (the `config.yaml` key of its ConfigMap).
    pub fn parse(text: &str) -> Option<Self> {
        let doc: Json = serde_yaml_ng::from_str(text).ok()?;
        let configs = doc.get("mig-configs")?.as_object()?;
        let geometries = configs
            .iter()
            .map(|(name, entries)| {
                let entries = entries
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| Entry {
                        enabled: e.get("mig-enabled").and_then(Json::as_bool) == Some(true),
                        devices: e
                            .get("mig-devices")
                            .and_then(Json::as_object)
                            .into_iter()
                            .flatten()
                            .filter_map(|(p, n)| {
                                Some((p.clone(), u32::try_from(n.as_u64()?).ok()?))
                            })
                            .collect(),
                        filtered: e.get("device-filter").is_some(),
                    })
                    .collect();
                (name.clone(), entries)
            })
            .collect();
        Some(Self { geometries })
    }

    pub fn has(&self, geometry: &str) -> bool {
        self.geometries.contains_key(geometry)
    }

    /// The layout of `geometry` on a GPU of this model: of the entries for it, the one whose
    /// profiles the GPU has (entries with a `device-filter` are for some models only).
    pub fn layout(&self, geometry: &str, model: &str, memory_gb: u32) -> Option<Layout> {
        let entries = self.geometries.get(geometry)?;
        // Entries for other models (by `device-filter`) ask for more of a profile than this
        // GPU has: the one whose counts fit is this GPU's.
        let fits = |e: &&Entry| {
            e.devices.iter().all(|(p, n)| {
                catalog::partitions_per_gpu(model, memory_gb, p).is_some_and(|max| *n <= max)
            })
        };
        let entry = entries
            .iter()
            .filter(|e| !e.filtered)
            .find(fits)
            .or_else(|| entries.iter().find(fits))
            .or_else(|| entries.first())?;
        Some(if entry.enabled {
            Layout::Enabled(entry.devices.clone())
        } else {
            Layout::Disabled
        })
    }
}

/// NVIDIA's `all-*` geometries as its default config set defines them, for a GPU model:
/// `all-disabled`, `all-enabled`, `all-balanced`, `all-<profile>` (as many as fit).
pub fn built_in(geometry: &str, model: &str, memory_gb: u32) -> Option<Layout> {
    match geometry {
        "all-disabled" => Some(Layout::Disabled),
        "all-enabled" => Some(Layout::Enabled(BTreeMap::new())),
        "all-balanced" => Some(Layout::Enabled(
            catalog::balanced(model, memory_gb)?
                .iter()
                .map(|(p, n)| ((*p).to_owned(), *n))
                .collect(),
        )),
        _ => {
            let profile = geometry.strip_prefix("all-")?;
            // A profile the GPU lacks still names a layout: the check reports it.
            let n = catalog::partitions_per_gpu(model, memory_gb, profile).unwrap_or(0);
            Some(Layout::Enabled(BTreeMap::from([(profile.to_owned(), n)])))
        }
    }
}

/// The extended resource a MIG profile is advertised as under the mixed strategy
/// (`nvidia.com/mig-1g.10gb`; a `+me` profile becomes `.me`).
pub fn resource(profile: &str) -> String {
    format!("nvidia.com/mig-{}", profile.replace('+', "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_config_set_and_picks_the_entry_for_the_gpu() {
        let text = "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n  all-1g.10gb:\n  - device-filter: [\"0x20B010DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices:\n      \"1g.5gb\": 7\n  - device-filter: [\"0x20B210DE\", \"0x233010DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices:\n      \"1g.10gb\": 7\n";
        let set = ConfigSet::parse(text).unwrap();
        assert_eq!(
            set.layout("all-1g.10gb", "H100", 80),
            Some(Layout::Enabled(BTreeMap::from([("1g.10gb".into(), 7)])))
        );
        assert_eq!(
            set.layout("all-disabled", "H100", 80),
            Some(Layout::Disabled)
        );
        assert_eq!(set.layout("custom", "H100", 80), None);
    }

    #[test]
    fn built_in_geometries_follow_nvidias_names() {
        assert_eq!(
            built_in("all-1g.20gb", "H100", 80),
            Some(Layout::Enabled(BTreeMap::from([("1g.20gb".into(), 4)])))
        );
        assert_eq!(
            built_in("all-1g.5gb", "H100", 80),
            Some(Layout::Enabled(BTreeMap::from([("1g.5gb".into(), 0)])))
        );
        assert_eq!(built_in("custom", "H100", 80), None);
        assert_eq!(resource("1g.10gb+me"), "nvidia.com/mig-1g.10gb.me");
    }
}
