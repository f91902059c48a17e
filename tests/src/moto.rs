//! A moto server of the test world (tests/cluster/moto), stopped when dropped.

use crate::repo_root;
use std::process::Command;

pub struct Moto {
    name: String,
    pub endpoint: String,
}

impl Moto {
    /// Starts (or finds running) the moto server `name`.
    pub fn start(name: &str) -> Self {
        let out = Command::new(repo_root().join("tests/cluster/moto"))
            .args(["start", name])
            .output()
            .expect("run tests/cluster/moto");
        assert!(
            out.status.success(),
            "moto start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Moto {
            name: name.to_owned(),
            endpoint: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        }
    }

    /// The moto virtual environment's python, which has boto3.
    pub fn python() -> String {
        let out = Command::new(repo_root().join("tests/cluster/moto"))
            .arg("python")
            .output()
            .expect("run tests/cluster/moto python");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Runs a boto3 script with `kw` (endpoint, region, test credentials) defined.
    pub fn boto3(&self, script: &str) -> String {
        let prelude = format!(
            "import boto3, json\nkw = dict(endpoint_url=\"{}\", region_name=\"us-east-1\", aws_access_key_id=\"test\", aws_secret_access_key=\"test\")\n",
            self.endpoint
        );
        let out = Command::new(Self::python())
            .args(["-c", &format!("{prelude}{script}")])
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "boto3 script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The environment a gpustack process needs to reach this server through the standard
    /// AWS credential chain.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "test".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("tests/cluster/moto"))
            .args(["stop", &self.name])
            .output();
    }
}
