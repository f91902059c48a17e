//! `gpustack node-check`: what NVML says about this machine's GPUs, checked against
//! expectations (GPU-FACTS: MIG devices are counted by walking `mig_device_by_index`, since
//! `mig_device_count` is the maximum, not what exists).

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError};
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct Expectations {
    /// The number of physical GPUs this node must have.
    #[arg(long, value_name = "N")]
    pub expect_gpus: Option<u32>,
    /// Text every GPU's name must contain, e.g. "H100" or "A100-SXM4-80GB".
    #[arg(long, value_name = "TEXT")]
    pub expect_model: Option<String>,
    /// Whether MIG must be enabled on every GPU.
    #[arg(long, value_name = "enabled|disabled", value_parser = ["enabled", "disabled"])]
    pub expect_mig: Option<String>,
    /// The number of MIG devices every GPU must have.
    #[arg(long, value_name = "N")]
    pub expect_mig_devices: Option<u32>,
    /// The lowest driver version accepted, e.g. 550.54.
    #[arg(long, value_name = "VERSION")]
    pub expect_min_driver: Option<String>,
    /// The most uncorrected ECC errors (aggregate, per GPU) accepted.
    #[arg(long, value_name = "N")]
    pub max_ecc_errors: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct MigDevice {
    pub name: String,
    pub uuid: String,
    pub memory_mib: u64,
}

#[derive(Debug, Serialize)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub memory_mib: u64,
    /// `None` where the GPU has no MIG (T4, A10G, L4, V100).
    pub mig_enabled: Option<bool>,
    pub mig_pending: Option<bool>,
    pub mig_devices: Vec<MigDevice>,
    /// `None` where the GPU has no ECC or does not say.
    pub ecc_enabled: Option<bool>,
    pub uncorrected_ecc_errors: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub driver_version: String,
    pub cuda_version: String,
    pub gpus: Vec<Gpu>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

fn read(nvml: &Nvml) -> Result<Report, nvml_wrapper::error::NvmlError> {
    let cuda = nvml.sys_cuda_driver_version()?;
    let mut gpus = Vec::new();
    for index in 0..nvml.device_count()? {
        let device = nvml.device_by_index(index)?;
        let mig = device.mig_mode().ok();
        let mut mig_devices = Vec::new();
        if mig.as_ref().is_some_and(|m| m.current == 1) {
            let slots = device.mig_device_count().unwrap_or(0);
            for slot in 0..slots {
                // Empty slots answer NotFound: only existing instances count.
                if let Ok(instance) = device.mig_device_by_index(slot) {
                    mig_devices.push(MigDevice {
                        name: instance.name().unwrap_or_default(),
                        uuid: instance.uuid().unwrap_or_default(),
                        memory_mib: instance.memory_info().map_or(0, |m| m.total >> 20),
                    });
                }
            }
        }
        gpus.push(Gpu {
            index,
            name: device.name()?,
            uuid: device.uuid()?,
            memory_mib: device.memory_info().map_or(0, |m| m.total >> 20),
            mig_enabled: mig.as_ref().map(|m| m.current == 1),
            mig_pending: mig.as_ref().map(|m| m.pending == 1),
            mig_devices,
            ecc_enabled: device.is_ecc_enabled().ok().map(|e| e.currently_enabled),
            uncorrected_ecc_errors: device
                .total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate)
                .ok(),
        });
    }
    Ok(Report {
        driver_version: nvml.sys_driver_version()?,
        cuda_version: format!("{}.{}", cuda / 1000, (cuda % 1000) / 10),
        gpus,
    })
}

/// Dotted version numbers compared number by number ("550.54.15" ≥ "550.54").
fn version_at_least(have: &str, want: &str) -> bool {
    let parse = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parse(have) >= parse(want)
}

pub fn checks(report: &Report, expect: &Expectations) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut add = |name: &str, passed: bool, detail: String| {
        checks.push(Check {
            name: name.to_owned(),
            passed,
            detail,
        });
    };
    if let Some(n) = expect.expect_gpus {
        let have = report.gpus.len();
        add(
            "gpus",
            have == n as usize,
            format!("{have} GPU(s), expected {n}"),
        );
    }
    if let Some(model) = &expect.expect_model {
        let wrong: Vec<&str> = report
            .gpus
            .iter()
            .filter(|g| !g.name.contains(model.as_str()))
            .map(|g| g.name.as_str())
            .collect();
        add(
            "model",
            wrong.is_empty() && !report.gpus.is_empty(),
            if wrong.is_empty() {
                format!("every GPU is a {model}")
            } else {
                format!("not a {model}: {}", wrong.join(", "))
            },
        );
    }
    if let Some(mode) = &expect.expect_mig {
        let want = mode == "enabled";
        let wrong: Vec<String> = report
            .gpus
            .iter()
            .filter(|g| g.mig_enabled.unwrap_or(false) != want)
            .map(|g| format!("GPU {} ({})", g.index, mig_text(g)))
            .collect();
        add(
            "mig mode",
            wrong.is_empty(),
            if wrong.is_empty() {
                format!("MIG {mode} on every GPU")
            } else {
                format!("expected MIG {mode}: {}", wrong.join(", "))
            },
        );
    }
    if let Some(n) = expect.expect_mig_devices {
        let wrong: Vec<String> = report
            .gpus
            .iter()
            .filter(|g| g.mig_devices.len() != n as usize)
            .map(|g| format!("GPU {} has {}", g.index, g.mig_devices.len()))
            .collect();
        add(
            "mig devices",
            wrong.is_empty(),
            if wrong.is_empty() {
                format!("{n} MIG device(s) on every GPU")
            } else {
                format!("expected {n} MIG device(s): {}", wrong.join(", "))
            },
        );
    }
    if let Some(min) = &expect.expect_min_driver {
        add(
            "driver",
            version_at_least(&report.driver_version, min),
            format!("driver {}, expected at least {min}", report.driver_version),
        );
    }
    if let Some(max) = expect.max_ecc_errors {
        let wrong: Vec<String> = report
            .gpus
            .iter()
            .filter(|g| g.uncorrected_ecc_errors.unwrap_or(0) > max)
            .map(|g| format!("GPU {}: {}", g.index, g.uncorrected_ecc_errors.unwrap_or(0)))
            .collect();
        add(
            "ecc errors",
            wrong.is_empty(),
            if wrong.is_empty() {
                format!("at most {max} uncorrected ECC error(s) per GPU")
            } else {
                format!(
                    "more than {max} uncorrected ECC errors: {}",
                    wrong.join(", ")
                )
            },
        );
    }
    checks
}

fn mig_text(gpu: &Gpu) -> String {
    match (gpu.mig_enabled, gpu.mig_pending) {
        (None, _) => "no MIG".to_owned(),
        (Some(now), Some(next)) if now != next => format!(
            "MIG {}, {} after reset",
            if now { "enabled" } else { "disabled" },
            if next { "enabled" } else { "disabled" }
        ),
        (Some(now), _) => format!("MIG {}", if now { "enabled" } else { "disabled" }),
    }
}

pub fn human(report: &Report, checks: &[Check]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "Driver {}, CUDA {}, {} GPU(s)\n",
        report.driver_version,
        report.cuda_version,
        report.gpus.len()
    );
    for g in &report.gpus {
        let ecc = match (g.ecc_enabled, g.uncorrected_ecc_errors) {
            (Some(true), Some(n)) => format!("ECC on, {n} uncorrected error(s)"),
            (Some(true), None) => "ECC on".to_owned(),
            (Some(false), _) => "ECC off".to_owned(),
            (None, _) => "ECC n/a".to_owned(),
        };
        let _ = writeln!(
            out,
            "GPU {}: {} ({}), {} MiB, {}, {ecc}",
            g.index,
            g.name,
            g.uuid,
            g.memory_mib,
            mig_text(g)
        );
        for m in &g.mig_devices {
            let _ = writeln!(out, "  MIG {} ({}), {} MiB", m.name, m.uuid, m.memory_mib);
        }
    }
    for c in checks {
        let _ = writeln!(
            out,
            "{} {}: {}",
            if c.passed { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    out
}

pub fn run(expect: &Expectations, json: bool) -> ExitCode {
    // GPUSTACK_NVML_LIB points at a libnvidia-ml elsewhere than the loader's search path.
    let nvml = match std::env::var_os("GPUSTACK_NVML_LIB") {
        Some(path) => Nvml::builder().lib_path(&path).init(),
        None => Nvml::init(),
    };
    let nvml = match nvml {
        Ok(nvml) => nvml,
        Err(e) => {
            let message = format!(
                "NVML is not available on this machine ({e}). node-check reads the GPUs through libnvidia-ml.so.1, which the NVIDIA driver installs: run it on a GPU node, or in a pod whose runtime mounts the driver (NVIDIA container toolkit, runtimeClassName: nvidia)."
            );
            report_error(&message, json);
            return ExitCode::from(1);
        }
    };
    let report = match read(&nvml) {
        Ok(report) => report,
        Err(e) => {
            report_error(&format!("NVML answered with an error: {e}"), json);
            return ExitCode::from(1);
        }
    };
    let checks = checks(&report, expect);
    let passed = checks.iter().all(|c| c.passed);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "driver_version": report.driver_version,
                "cuda_version": report.cuda_version,
                "gpus": report.gpus,
                "checks": checks,
                "passed": passed,
            }))
            .unwrap_or_default()
        );
    } else {
        print!("{}", human(&report, &checks));
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn report_error(message: &str, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::json!({ "error": message, "passed": false })
        );
    } else {
        eprintln!("Error: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100(mig: bool, devices: usize) -> Gpu {
        Gpu {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: "GPU-1".into(),
            memory_mib: 81559,
            mig_enabled: Some(mig),
            mig_pending: Some(mig),
            mig_devices: (0..devices)
                .map(|i| MigDevice {
                    name: "MIG 1g.10gb".into(),
                    uuid: format!("MIG-{i}"),
                    memory_mib: 9856,
                })
                .collect(),
            ecc_enabled: Some(true),
            uncorrected_ecc_errors: Some(0),
        }
    }

    #[test]
    fn expectations_pass_and_fail_with_reasons() {
        let report = Report {
            driver_version: "550.54.15".into(),
            cuda_version: "12.4".into(),
            gpus: vec![h100(true, 7)],
        };
        let expect = Expectations {
            expect_gpus: Some(1),
            expect_model: Some("H100".into()),
            expect_mig: Some("enabled".into()),
            expect_mig_devices: Some(7),
            expect_min_driver: Some("550.54".into()),
            max_ecc_errors: Some(0),
        };
        assert!(checks(&report, &expect).iter().all(|c| c.passed));
        let strict = Expectations {
            expect_gpus: Some(8),
            expect_min_driver: Some("560".into()),
            expect_mig_devices: Some(3),
            ..Default::default()
        };
        let failed: Vec<String> = checks(&report, &strict)
            .into_iter()
            .filter(|c| !c.passed)
            .map(|c| c.detail)
            .collect();
        assert_eq!(
            failed,
            [
                "1 GPU(s), expected 8",
                "expected 3 MIG device(s): GPU 0 has 7",
                "driver 550.54.15, expected at least 560"
            ]
        );
    }

    #[test]
    fn driver_versions_compare_by_number() {
        assert!(version_at_least("550.54.15", "550.54"));
        assert!(version_at_least("560.1", "550.99"));
        assert!(!version_at_least("535.129.03", "550"));
    }
}
