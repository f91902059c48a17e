//! Tests in the test world: kwok clusters with a real control plane, helm, moto, the AKS and
//! GKE fakes.

mod adopt;
mod aks;
mod backends;
mod drift_cronjob;
mod e2e;
mod eks;
mod gke;
mod gpu_model;
mod karpenter;
mod moto;
mod policy;
mod requests;
mod testworld;
