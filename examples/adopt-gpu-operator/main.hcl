# Adopting a GPU Operator that was installed by hand (helm install, kubectl create): import
# blocks take the release, its namespace and the time-slicing ConfigMap into the stack, and
# the resource blocks say what they are. Nothing is created, changed or deleted by the first
# apply when the blocks match what is installed; from then on the stack manages them.
#
# To write the resource blocks from what is installed instead of by hand, keep only the
# providers and the import blocks and run:
#   gpustack plan --var kubeconfig=PATH --generate-config-out generated.hcl

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "chart" {
  type        = string
  default     = "gpu-operator"
  description = "Where upgrades take the chart from: a path, an OCI reference or a name in the repository."
}

provider "kubernetes" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

provider "helm" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

import {
  to = kubernetes_manifest.namespace
  id = "v1/Namespace/gpu-operator"
}

import {
  to = helm_release.gpu_operator
  id = "gpu-operator/gpu-operator"
}

import {
  to = kubernetes_manifest.time_slicing
  id = "v1/ConfigMap/gpu-operator/time-slicing-config"
}

# These resource blocks are what `--generate-config-out` writes for the installation, with the
# chart taken from a variable (helm records only the chart's name) and the version left to what
# is installed.
resource "kubernetes_manifest" "namespace" {
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name = "gpu-operator"
      # Set by the API server and by helm's --create-namespace.
      labels = {
        "kubernetes.io/metadata.name" = "gpu-operator"
        name                          = "gpu-operator"
      }
    }
    spec = {
      finalizers = ["kubernetes"]
    }
  }
}

resource "helm_release" "gpu_operator" {
  name      = "gpu-operator"
  chart     = var.chart
  namespace = kubernetes_manifest.namespace.manifest.metadata.name
  values = {
    driver  = { enabled = false }
    toolkit = { enabled = false }
  }
}

resource "kubernetes_manifest" "time_slicing" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "time-slicing-config"
      namespace = kubernetes_manifest.namespace.manifest.metadata.name
    }
    data = {
      any = <<-EOT
        version: v1
        sharing:
          timeSlicing:
            resources:
            - name: nvidia.com/gpu
              replicas: 4
      EOT
    }
  }
}
