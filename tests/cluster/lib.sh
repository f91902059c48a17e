# Shared settings of the test world's scripts (sourced, not run).
# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables are for the scripts that source this file

tw_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$tw_dir/versions.env"

# Where `build` puts the binaries, and where clusters live (kwokctl's work directory: each
# cluster is clusters/NAME inside it, with its kubeconfig, pki, etcd data, logs and pids).
tw_cache=${GPUSTACK_TESTWORLD_CACHE:-$HOME/.cache/gpustack-testworld}
tw_home=${GPUSTACK_TESTWORLD_HOME:-$HOME/.cache/gpustack-testworld}

tw_kube_bin=$tw_cache/kubernetes-$KUBERNETES_VERSION/bin
tw_kwok_bin=$tw_cache/kwok-$KWOK_VERSION/bin
tw_etcd_bin=$tw_cache/etcd-$ETCD_VERSION/bin
tw_helm_bin=$tw_cache/helm-$HELM_VERSION/bin

tw_log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
tw_die() {
  tw_log "error: $*"
  exit 1
}

# A cluster name becomes a directory and a kubeconfig context: keep it a DNS label.
tw_check_name() {
  [[ $1 =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] ||
    tw_die "cluster name '$1' must be a DNS label (lower-case letters, digits and '-')"
}

tw_cluster_dir() { printf '%s/clusters/%s\n' "$tw_home" "$1"; }
tw_kubeconfig() { printf '%s/clusters/%s/kubeconfig\n' "$tw_home" "$1"; }

# kwokctl keeps its clusters, its configuration and its download cache under KWOK_WORKDIR;
# never under ~/.kwok, and never in ~/.kube/config (every call passes --kubeconfig).
tw_kwokctl() { KWOK_WORKDIR=$tw_home "$tw_kwok_bin/kwokctl" "$@"; }

# The processes of a cluster, from kwokctl's pid files, that are still alive and still that
# cluster's (their command line names the cluster directory: a reused pid is left alone).
tw_cluster_pids() {
  local dir f pid
  dir=$(tw_cluster_dir "$1")
  for f in "$dir"/pids/*.pid; do
    [[ -f $f ]] || continue
    pid=$(tr -dc 0-9 <"$f")
    [[ -n $pid && -r /proc/$pid/cmdline ]] || continue
    if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/"; then
      printf '%s %s\n' "$pid" "$(basename "$f" .pid)"
    fi
  done
}

# tw_lock FILE WHAT — takes an exclusive lock on FILE, held until the script exits, waiting
# (and saying so) while another process holds it. Every install step and every start of a
# named cluster or server runs under one, so that scripts started at the same moment install
# once and never see each other's half-made work. The lock's descriptor is in $tw_lock_fd:
# a long-lived process started under the lock must close it (`{tw_lock_fd}>&-`), or it would
# hold the lock for as long as it lives.
tw_lock() {
  command -v flock >/dev/null ||
    tw_die "flock is not installed (util-linux); the test world's scripts need it to install safely"
  mkdir -p "$(dirname "$1")"
  exec {tw_lock_fd}>"$1"
  if ! flock -n "$tw_lock_fd"; then
    tw_log "waiting for another process ($2) ..."
    flock "$tw_lock_fd"
  fi
}
