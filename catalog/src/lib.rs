//! Built-in GPU knowledge: the GPUs of cloud instance types (for when no cloud API answers),
//! the GPU models GFD and DRA name, and the MIG profiles each model offers (NVIDIA's MIG
//! user guide; the clouds' instance type pages). Whatever comes from here is reported as
//! coming from the built-in table.

/// The GPUs of one instance or VM size.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpus {
    pub count: u32,
    pub model: String,
    pub memory_gb: u32,
}

impl Gpus {
    /// Whether the model can be partitioned with MIG.
    pub fn has_mig(&self) -> bool {
        mig_capable(&self.model)
    }
}

/// What every line that used this table says about where its GPUs came from.
pub const BUILT_IN: &str = "built-in table";

const INSTANCE_TYPES: &[(&str, u32, &str, u32)] = &[
    // Azure
    ("Standard_NC4as_T4_v3", 1, "T4", 16),
    ("Standard_NC8as_T4_v3", 1, "T4", 16),
    ("Standard_NC16as_T4_v3", 1, "T4", 16),
    ("Standard_NC64as_T4_v3", 4, "T4", 16),
    ("Standard_NC24ads_A100_v4", 1, "A100", 80),
    ("Standard_NC48ads_A100_v4", 2, "A100", 80),
    ("Standard_NC96ads_A100_v4", 4, "A100", 80),
    ("Standard_ND96asr_v4", 8, "A100", 40),
    ("Standard_ND96amsr_A100_v4", 8, "A100", 80),
    ("Standard_NC40ads_H100_v5", 1, "H100", 94),
    ("Standard_ND96isr_H100_v5", 8, "H100", 80),
    ("Standard_ND96isr_H200_v5", 8, "H200", 141),
    // AWS
    ("g4dn.xlarge", 1, "T4", 16),
    ("g4dn.2xlarge", 1, "T4", 16),
    ("g4dn.12xlarge", 4, "T4", 16),
    ("g5.xlarge", 1, "A10G", 24),
    ("g5.2xlarge", 1, "A10G", 24),
    ("g5.12xlarge", 4, "A10G", 24),
    ("g5.48xlarge", 8, "A10G", 24),
    ("g6.xlarge", 1, "L4", 24),
    ("p3.2xlarge", 1, "V100", 16),
    ("p3.8xlarge", 4, "V100", 16),
    ("p4d.24xlarge", 8, "A100", 40),
    ("p4de.24xlarge", 8, "A100", 80),
    ("p5.48xlarge", 8, "H100", 80),
    ("p5e.48xlarge", 8, "H200", 141),
    // Google Cloud
    ("a2-highgpu-1g", 1, "A100", 40),
    ("a2-highgpu-8g", 8, "A100", 40),
    ("a2-ultragpu-1g", 1, "A100", 80),
    ("g2-standard-4", 1, "L4", 24),
    ("a3-highgpu-8g", 8, "H100", 80),
    ("a3-ultragpu-8g", 8, "H200", 141),
];

/// The GPUs of an instance type, VM size or machine type this table knows.
pub fn gpus(instance_type: &str) -> Option<Gpus> {
    INSTANCE_TYPES
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(instance_type))
        .map(|&(_, count, model, memory_gb)| Gpus {
            count,
            model: model.to_owned(),
            memory_gb,
        })
}

/// Whether a machine type's name says it has GPUs although the table does not know it
/// (Azure's N-series, AWS's g/p families, GCE's accelerator-optimised families), so that an
/// unknown GPU size is reported rather than silently left out.
pub fn looks_like_gpu_machine(machine: &str) -> bool {
    let lower = machine.to_ascii_lowercase();
    lower.starts_with("standard_n")
        || ["g4", "g5", "g6", "p3", "p4", "p5", "p6"]
            .iter()
            .any(|f| lower.starts_with(&format!("{f}.")) || lower.starts_with(&format!("{f}dn.")))
        || ["a2-", "a3-", "a4-", "g2-", "g4-"]
            .iter()
            .any(|f| lower.starts_with(f))
}

/// The memory of a GPU model as the clouds offer it in one size only (T4, L4, V100 on GCE);
/// `None` for models sold with several.
pub fn memory_of_model(model: &str) -> Option<u32> {
    Some(match model {
        "T4" | "V100" | "P100" => 16,
        "P4" => 8,
        "L4" => 24,
        "B200" => 180,
        _ => return None,
    })
}

/// A GKE accelerator type's model and memory per GPU.
pub fn gke_accelerator(accelerator: &str) -> Option<(&'static str, u32)> {
    Some(match accelerator {
        "nvidia-tesla-t4" => ("T4", 16),
        "nvidia-tesla-v100" => ("V100", 16),
        "nvidia-tesla-p100" => ("P100", 16),
        "nvidia-tesla-a100" => ("A100", 40),
        "nvidia-a100-80gb" => ("A100", 80),
        "nvidia-l4" => ("L4", 24),
        "nvidia-h100-80gb" | "nvidia-h100-mega-80gb" => ("H100", 80),
        "nvidia-h200-141gb" => ("H200", 141),
        "nvidia-b200" => ("B200", 180),
        _ => return None,
    })
}

const A100_40GB: &[(&str, u32)] = &[
    ("1g.5gb", 7),
    ("1g.5gb+me", 1),
    ("1g.10gb", 4),
    ("2g.10gb", 3),
    ("3g.20gb", 2),
    ("4g.20gb", 1),
    ("7g.40gb", 1),
];
const GB80: &[(&str, u32)] = &[
    ("1g.10gb", 7),
    ("1g.10gb+me", 1),
    ("1g.20gb", 4),
    ("2g.20gb", 3),
    ("3g.40gb", 2),
    ("4g.40gb", 1),
    ("7g.80gb", 1),
];
const H200: &[(&str, u32)] = &[
    ("1g.18gb", 7),
    ("1g.18gb+me", 1),
    ("1g.35gb", 4),
    ("2g.35gb", 3),
    ("3g.71gb", 2),
    ("4g.71gb", 1),
    ("7g.141gb", 1),
];
const A30: &[(&str, u32)] = &[
    ("1g.6gb", 4),
    ("1g.6gb+me", 1),
    ("2g.12gb", 2),
    ("2g.12gb+me", 1),
    ("4g.24gb", 1),
];

/// The MIG profiles of a GPU model with how many fit on one GPU (NVIDIA's maxima, which GKE's
/// `gpuPartitionSize` shares); `None` for a GPU without MIG or a model this table lacks (see
/// [`mig_capable`]).
pub fn mig_profiles(model: &str, memory_gb: u32) -> Option<&'static [(&'static str, u32)]> {
    match (model, memory_gb) {
        ("A100", 40) => Some(A100_40GB),
        ("A100", 80) | ("H100", 80) => Some(GB80),
        ("H200", 141) => Some(H200),
        ("A30", _) => Some(A30),
        _ => None,
    }
}

/// Whether a GPU model has MIG at all (GPU-FACTS: A100, A30, H100, H200 and newer), whether or
/// not [`mig_profiles`] knows its profiles (an H100 NVL, a B200).
pub fn mig_capable(model: &str) -> bool {
    [
        "A100", "A30", "H100", "H200", "B200", "B300", "GB200", "GB300",
    ]
    .contains(&model)
}

/// How many instances of `profile` fit on one GPU of this model (`1g.20gb` on an H100: 4).
pub fn partitions_per_gpu(model: &str, memory_gb: u32, profile: &str) -> Option<u32> {
    let wanted = profile.replace(".me", "+me");
    mig_profiles(model, memory_gb)?
        .iter()
        .find(|(p, _)| *p == wanted)
        .map(|(_, n)| *n)
}

/// A MIG profile named by its slices only (AKS's `MIG1g` → `1g`): the GPU's smallest profile of
/// that many compute slices, as AKS creates it.
pub fn profile_by_slices(model: &str, memory_gb: u32, slices: &str) -> Option<&'static str> {
    mig_profiles(model, memory_gb)?
        .iter()
        .map(|(p, _)| *p)
        .find(|p| !p.contains('+') && p.split('.').next() == Some(slices))
}

/// The profiles `all-balanced` makes per GPU in NVIDIA's default mig-parted set.
pub fn balanced(model: &str, memory_gb: u32) -> Option<&'static [(&'static str, u32)]> {
    match (model, memory_gb) {
        ("A100", 40) => Some(&[("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1)]),
        ("A100", 80) | ("H100", 80..=96) => Some(&[("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)]),
        ("H200", _) => Some(&[("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1)]),
        ("A30", _) => Some(&[("1g.6gb", 2), ("2g.12gb", 1)]),
        _ => None,
    }
}

/// A GPU model as GFD's `nvidia.com/gpu.product` label or DRA's `productName` names it
/// (`Tesla-T4`, `NVIDIA-A100-SXM4-80GB`, `NVIDIA-H100-80GB-HBM3`, `NVIDIA H200`, with GFD's
/// `-SHARED` and `-MIG-<profile>` suffixes), with its memory from the name or from GFD's
/// `nvidia.com/gpu.memory` (MiB).
pub fn product(label: &str, memory_mib: Option<u64>) -> Option<(String, u32)> {
    let name = label.replace(' ', "-");
    let name = name.trim_end_matches("-SHARED");
    let name = name.split("-MIG-").next().unwrap_or(name);
    let upper = name.to_ascii_uppercase();
    let model = [
        "GB300", "GB200", "B300", "B200", "H200", "H100", "A100", "A30", "A10G", "L40S", "L4",
        "T4", "V100", "P100",
    ]
    .into_iter()
    .find(|m| upper.split(['-', '_']).any(|part| part == *m))?;
    let from_name = upper
        .split(['-', '_'])
        .filter_map(|part| part.strip_suffix("GB")?.parse::<u32>().ok())
        .next();
    let from_label = memory_mib.map(|mib| ((mib as f64) / 1024.0).round() as u32);
    let memory = from_name.or(from_label).or(match model {
        "T4" | "V100" | "P100" => Some(16),
        "A10G" | "L4" | "A30" => Some(24),
        "H100" => Some(80),
        "H200" => Some(141),
        _ => None,
    })?;
    // GFD's memory label is a little under the marketing size (81559 MiB for 80 GB).
    let memory = match (model, memory) {
        ("A100", 39..=41) => 40,
        ("A100", 79..=81) | ("H100", 79..=81) => 80,
        ("H200", 139..=144) => 141,
        (_, m) => m,
    };
    Some((model.to_owned(), memory))
}

/// What NVIDIA's DRA driver publishes of a full GPU that no node has yet published: the
/// NVML names and numbers of the model (NVML's product name, architecture and compute
/// capability, its total memory in MiB). The product name of an A100 depends on its form
/// factor, which the VM size tells (Azure's NC A100 v4 sizes are PCIe cards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraGpu {
    pub product: &'static str,
    pub architecture: &'static str,
    /// `cudaComputeCapability` as the driver writes it (`8.0.0`).
    pub compute_capability: &'static str,
    pub memory_mib: u64,
}

/// The DRA view of a GPU model (`A100`, 80 GB) on a machine type.
pub fn dra_gpu(model: &str, memory_gb: u32, machine: &str) -> Option<DraGpu> {
    let pcie = machine.to_ascii_lowercase().starts_with("standard_nc");
    let (product, architecture, compute_capability, memory_mib) = match (model, memory_gb) {
        ("T4", _) => ("Tesla T4", "Turing", "7.5.0", 15360),
        ("V100", 16) => ("Tesla V100-SXM2-16GB", "Volta", "7.0.0", 16384),
        ("A10G", _) => ("NVIDIA A10G", "Ampere", "8.6.0", 23028),
        ("L4", _) => ("NVIDIA L4", "Ada Lovelace", "8.9.0", 23034),
        ("L40S", _) => ("NVIDIA L40S", "Ada Lovelace", "8.9.0", 46068),
        ("A100", 40) => ("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40960),
        ("A100", 80) if pcie => ("NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", 81920),
        ("A100", 80) => ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 81920),
        ("H100", 80) => ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559),
        ("H100", 94) => ("NVIDIA H100 NVL", "Hopper", "9.0.0", 95830),
        ("H200", _) => ("NVIDIA H200", "Hopper", "9.0.0", 143771),
        ("B200", _) => ("NVIDIA B200", "Blackwell", "10.0.0", 183359),
        _ => return None,
    };
    Some(DraGpu {
        product,
        architecture,
        compute_capability,
        memory_mib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_the_reference_flows_sizes() {
        assert_eq!(
            gpus("Standard_NC4as_T4_v3").map(|g| (g.count, g.model, g.memory_gb)),
            Some((1, "T4".to_owned(), 16))
        );
        assert_eq!(gpus("p4d.24xlarge").map(|g| g.count), Some(8));
        assert_eq!(gpus("m5.large"), None);
        assert!(looks_like_gpu_machine("Standard_NC6s_v3"));
        assert!(looks_like_gpu_machine("g4dn.16xlarge"));
        assert!(!looks_like_gpu_machine("Standard_D4s_v5"));
        assert!(!looks_like_gpu_machine("m5.large"));
    }

    #[test]
    fn reads_gfd_and_dra_product_names() {
        assert_eq!(product("Tesla-T4", None), Some(("T4".into(), 16)));
        assert_eq!(product("Tesla-T4-SHARED", None), Some(("T4".into(), 16)));
        assert_eq!(
            product("NVIDIA-A100-SXM4-40GB", None),
            Some(("A100".into(), 40))
        );
        assert_eq!(
            product("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", None),
            Some(("A100".into(), 80))
        );
        assert_eq!(
            product("NVIDIA-H100-80GB-HBM3", Some(81559)),
            Some(("H100".into(), 80))
        );
        assert_eq!(
            product("NVIDIA-H200", Some(143771)),
            Some(("H200".into(), 141))
        );
        assert_eq!(product("NVIDIA A10G", None), Some(("A10G".into(), 24)));
        assert_eq!(product("NVIDIA-L4", None), Some(("L4".into(), 24)));
        assert_eq!(product("Matrox", None), None);
    }

    #[test]
    fn mig_partitions_per_gpu_follow_the_model_and_profile() {
        assert_eq!(partitions_per_gpu("H100", 80, "1g.20gb"), Some(4));
        assert_eq!(partitions_per_gpu("H100", 80, "1g.10gb"), Some(7));
        assert_eq!(partitions_per_gpu("H200", 141, "1g.35gb"), Some(4));
        assert_eq!(partitions_per_gpu("A100", 40, "1g.5gb"), Some(7));
        assert_eq!(partitions_per_gpu("A100", 40, "1g.10gb"), Some(4));
        assert_eq!(partitions_per_gpu("A100", 80, "1g.10gb.me"), Some(1));
        assert_eq!(partitions_per_gpu("H100", 80, "1g.5gb"), None);
        assert_eq!(partitions_per_gpu("T4", 16, "1g.5gb"), None);
    }
}
