variable "operator_values" {
  type      = string
  sensitive = true
}

resource "random_id" "suffix" {
  byte_length = 2
}

resource "google_container_node_pool" "l4" {
  name     = "l4-${random_id.suffix.hex}"
  cluster  = "ml"
  location = "us-central1-a"

  autoscaling {
    min_node_count = 0
    max_node_count = 4
  }

  node_config {
    machine_type = "g2-standard-8"
    labels = {
      "gke-no-default-nvidia-gpu-device-plugin" = "true"
    }

    guest_accelerator {
      type  = "nvidia-l4"
      count = 1

      gpu_driver_installation_config {
        gpu_driver_version = "INSTALLATION_DISABLED"
      }
    }
  }
}

resource "helm_release" "gpu_operator" {
  name       = "gpu-operator"
  namespace  = "gpu-operator"
  repository = "https://helm.ngc.nvidia.com/nvidia"
  chart      = "gpu-operator"
  values     = [var.operator_values]
}

resource "kubectl_manifest" "sharing" {
  yaml_body = <<-YAML
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: sharing
      namespace: gpu-operator
    data:
      any: |
        version: v1
        sharing:
          timeSlicing:
            resources:
            - name: nvidia.com/gpu
              replicas: 1
  YAML
}
