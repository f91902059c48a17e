//! GPUs of cloud instance types, for the plan's capacity section where no cloud API answers
//! (AWS answers live through DescribeInstanceTypes, which is preferred there).

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
        ["A100", "A30", "H100", "H200", "B200", "GB200"].contains(&self.model.as_str())
    }
}

const CATALOG: &[(&str, u32, &str, u32)] = &[
    // Azure
    ("Standard_NC4as_T4_v3", 1, "T4", 16),
    ("Standard_NC8as_T4_v3", 1, "T4", 16),
    ("Standard_NC64as_T4_v3", 4, "T4", 16),
    ("Standard_NC24ads_A100_v4", 1, "A100", 80),
    ("Standard_NC48ads_A100_v4", 2, "A100", 80),
    ("Standard_ND96asr_v4", 8, "A100", 40),
    ("Standard_ND96amsr_A100_v4", 8, "A100", 80),
    ("Standard_ND96isr_H100_v5", 8, "H100", 80),
    // AWS
    ("g4dn.xlarge", 1, "T4", 16),
    ("g4dn.12xlarge", 4, "T4", 16),
    ("g5.xlarge", 1, "A10G", 24),
    ("g5.12xlarge", 4, "A10G", 24),
    ("g5.48xlarge", 8, "A10G", 24),
    ("p3.2xlarge", 1, "V100", 16),
    ("p3.8xlarge", 4, "V100", 16),
    ("p4d.24xlarge", 8, "A100", 40),
    ("p5.48xlarge", 8, "H100", 80),
    // Google Cloud
    ("a2-highgpu-1g", 1, "A100", 40),
    ("a2-ultragpu-1g", 1, "A100", 80),
    ("g2-standard-4", 1, "L4", 24),
    ("a3-highgpu-8g", 8, "H100", 80),
];

/// The GPUs of an instance type, VM size or machine type this catalog knows.
pub fn gpus(instance_type: &str) -> Option<Gpus> {
    CATALOG
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(instance_type))
        .map(|&(_, count, model, memory_gb)| Gpus {
            count,
            model: model.to_owned(),
            memory_gb,
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
    }
}
