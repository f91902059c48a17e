//! The device plugin's sharing config (`version: v1`, `flags`, `sharing.timeSlicing` or
//! `sharing.mps`), parsed and validated the way the plugin does.

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SharedResource {
    pub name: String,
    pub replicas: u32,
    #[serde(default)]
    pub rename: Option<String>,
    #[serde(default)]
    pub devices: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharingKind {
    TimeSlicing,
    Mps,
}

impl SharingKind {
    pub fn label(self) -> &'static str {
        match self {
            SharingKind::TimeSlicing => "time-slicing",
            SharingKind::Mps => "mps",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharing {
    pub kind: SharingKind,
    pub rename_by_default: bool,
    pub fail_requests_greater_than_one: bool,
    pub resources: Vec<SharedResource>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharingConfig {
    pub mig_strategy: String,
    sharing: Option<Sharing>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSharing {
    #[serde(default)]
    rename_by_default: bool,
    #[serde(default)]
    fail_requests_greater_than_one: bool,
    #[serde(default)]
    resources: Vec<SharedResource>,
}

#[derive(Deserialize)]
struct RawConfig {
    version: String,
    #[serde(default)]
    flags: RawFlags,
    #[serde(default)]
    sharing: Option<RawSharingBlock>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawFlags {
    #[serde(default)]
    mig_strategy: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSharingBlock {
    #[serde(default)]
    time_slicing: Option<RawSharing>,
    #[serde(default)]
    mps: Option<RawSharing>,
}

impl SharingConfig {
    /// Parses and validates; the error is what the plugin would log before refusing it.
    pub fn parse(yaml: &str) -> Result<Self, String> {
        let raw: RawConfig =
            serde_yaml_ng::from_str(yaml).map_err(|e| format!("invalid config: {e}"))?;
        if raw.version != "v1" {
            return Err(format!("unknown version {:?}", raw.version));
        }
        let mig_strategy = raw.flags.mig_strategy.unwrap_or_else(|| "none".into());
        if !["none", "single", "mixed"].contains(&mig_strategy.as_str()) {
            return Err(format!("unknown migStrategy {mig_strategy:?}"));
        }
        let sharing = match raw.sharing {
            None => None,
            Some(RawSharingBlock {
                time_slicing: Some(_),
                mps: Some(_),
            }) => return Err("timeSlicing and mps exclude each other".into()),
            Some(RawSharingBlock {
                time_slicing: Some(s),
                mps: None,
            }) => Some((SharingKind::TimeSlicing, s)),
            Some(RawSharingBlock {
                time_slicing: None,
                mps: Some(s),
            }) => Some((SharingKind::Mps, s)),
            Some(RawSharingBlock {
                time_slicing: None,
                mps: None,
            }) => None,
        };
        let sharing = match sharing {
            None => None,
            Some((kind, s)) => {
                if s.resources.is_empty() {
                    return Err("sharing needs at least one resource".into());
                }
                for r in &s.resources {
                    if r.replicas < 2 {
                        return Err(format!(
                            "{}: replicas must be at least 2, got {}",
                            r.name, r.replicas
                        ));
                    }
                    if r.rename.is_some() || r.devices.is_some() {
                        return Err(format!(
                            "{}: per-resource rename and devices are not supported",
                            r.name
                        ));
                    }
                    if kind == SharingKind::Mps
                        && (r.name != "nvidia.com/gpu" || mig_strategy != "none")
                    {
                        return Err(
                            "MPS shares only full GPUs (nvidia.com/gpu), never with MIG".into()
                        );
                    }
                }
                Some(Sharing {
                    kind,
                    rename_by_default: s.rename_by_default,
                    fail_requests_greater_than_one: s.fail_requests_greater_than_one,
                    resources: s.resources,
                })
            }
        };
        Ok(Self {
            mig_strategy,
            sharing,
        })
    }

    pub fn sharing(&self) -> Option<&Sharing> {
        self.sharing.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_refuses_what_gpu_facts_says_it_refuses() {
        let base = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: ";
        assert!(SharingConfig::parse(&format!("{base}10\n")).is_ok());
        assert!(
            SharingConfig::parse(&format!("{base}1\n"))
                .unwrap_err()
                .contains("at least 2")
        );
        assert!(
            SharingConfig::parse("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n")
                .is_err()
        );
        assert!(SharingConfig::parse("version: v2\n").is_err());
        assert!(SharingConfig::parse(&format!("{base}4\n      rename: foo\n")).is_err());
        let both = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n";
        assert!(SharingConfig::parse(both).unwrap_err().contains("exclude"));
        let mps_mig = "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n";
        assert!(SharingConfig::parse(mps_mig).unwrap_err().contains("MPS"));
        let ts_mig = "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n";
        assert!(
            SharingConfig::parse(ts_mig).is_ok(),
            "time-slicing works on MIG devices of the mixed strategy"
        );
    }
}
