//! Runs the GPU behaviour simulator against a cluster until interrupted, so that a person can
//! try the examples on the local test cluster: `gpusim KUBECONFIG`.

use gpustack_tests::gpusim::controller::Simulator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: gpusim KUBECONFIG");
        std::process::exit(2);
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(&path)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    eprintln!("gpusim: simulating NVIDIA's operands on the cluster of {path}");
    Simulator::run(kube::Client::try_from(config)?).await;
    Ok(())
}
