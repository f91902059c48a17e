#!/usr/bin/env python3
"""Writes src/typed_fields.rs: the API fields of the kinds whose Terraform schemas are too deep
to list by hand (the workload kinds, with the whole pod template), read from the OpenAPI v3
documents a kube-apiserver serves.

    kubectl get --raw /openapi/v3/apis/apps/v1 > apps.json   # and api/v1, apis/batch/v1,
    # apis/policy/v1, apis/networking.k8s.io/v1, apis/autoscaling/v2, apis/storage.k8s.io/v1,
    # apis/admissionregistration.k8s.io/v1, apis/autoscaling/v1, apis/discovery.k8s.io/v1,
    # apis/apiregistration.k8s.io/v1
    typed_fields.py apps.json core.json ... storage.json > src/typed_fields.rs

The table holds Kubernetes' names and types only; Terraform's names follow from them by the
rule and the exceptions in typed.rs (RENAMES). world::typed_fields checks the committed file
against the test world's API server.
"""

import json
import sys

# The spec types of the kinds, one constant each with everything they reach.
ROOTS = [
    "io.k8s.api.apps.v1.DeploymentSpec",
    "io.k8s.api.apps.v1.DaemonSetSpec",
    "io.k8s.api.apps.v1.StatefulSetSpec",
    "io.k8s.api.batch.v1.JobSpec",
    "io.k8s.api.batch.v1.CronJobSpec",
    "io.k8s.api.core.v1.ServiceSpec",
    "io.k8s.api.policy.v1.PodDisruptionBudgetSpec",
    "io.k8s.api.networking.v1.NetworkPolicySpec",
    "io.k8s.api.networking.v1.IngressClassSpec",
    "io.k8s.api.networking.v1.IngressSpec",
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
    # A PersistentVolume's spec as typed.rs composes it (Terraform wraps its sources in a
    # block of their own): the types it reaches that the pod template does not.
    "io.k8s.api.core.v1.AzureFilePersistentVolumeSource",
    "io.k8s.api.core.v1.CSIPersistentVolumeSource",
    "io.k8s.api.core.v1.CephFSPersistentVolumeSource",
    "io.k8s.api.core.v1.CinderPersistentVolumeSource",
    "io.k8s.api.core.v1.FlexPersistentVolumeSource",
    "io.k8s.api.core.v1.GlusterfsPersistentVolumeSource",
    "io.k8s.api.core.v1.ISCSIPersistentVolumeSource",
    "io.k8s.api.core.v1.LocalVolumeSource",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.RBDPersistentVolumeSource",
    "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource",
    "io.k8s.api.core.v1.StorageOSPersistentVolumeSource",
    "io.k8s.api.core.v1.VolumeNodeAffinity",
    "io.k8s.api.storage.v1.CSIDriverSpec",
    "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
    "io.k8s.api.admissionregistration.v1.MutatingWebhook",
    "io.k8s.api.core.v1.PodSpec",
    "io.k8s.api.core.v1.ReplicationControllerSpec",
    "io.k8s.api.core.v1.EndpointSubset",
    "io.k8s.api.discovery.v1.Endpoint",
    "io.k8s.api.discovery.v1.EndpointPort",
    "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec",
]
# An embedded object's metadata is Terraform's metadata block (typed_vocabulary.rs).
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Strings on the wire.
STRINGS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
}
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# Integer file modes Terraform writes as octal strings.
MODES = {"mode", "defaultMode"}


def reference(prop):
    ref = prop.get("$ref") or (prop.get("allOf") or [{}])[0].get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def const_name(type_name):
    short = (
        type_name.removeprefix("io.k8s.api.")
        .removeprefix("io.k8s.apimachinery.pkg.")
        .removeprefix("io.k8s.kube-aggregator.pkg.apis.")
    )
    out = []
    for part in short.split("."):
        word = ""
        for i, c in enumerate(part):
            if c.isupper() and i and (part[i - 1].islower() or (i + 1 < len(part) and part[i + 1].islower())):
                word += "_"
            word += c.upper()
        out.append(word)
    return "_".join(out)


def main(paths):
    schemas = {}
    version = None
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        version = version or doc.get("info", {}).get("version")
        schemas.update(doc["components"]["schemas"])

    emitted = {}
    order = []

    def field_type(name, prop):
        ref = reference(prop)
        if ref == OBJECT_META:
            return "F::Obj(OBJECT_META)"
        if ref == INT_OR_STRING or prop.get("format") == "int-or-string":
            return "F::IntOrStr"
        if ref in STRINGS:
            return "F::Str"
        if ref:
            visit(ref)
            return f"F::Obj({const_name(ref)})"
        kind = prop.get("type")
        if kind == "string":
            return "F::Base64" if prop.get("format") == "byte" else "F::Str"
        if kind in ("integer", "number"):
            return "F::Mode" if name in MODES else "F::Num"
        if kind == "boolean":
            return "F::Bool"
        if kind == "array":
            items = prop["items"]
            item_ref = reference(items)
            if item_ref and item_ref not in STRINGS:
                visit(item_ref)
                return f"F::Objs({const_name(item_ref)})"
            if items.get("type") in ("integer", "number"):
                return "F::Nums"
            return "F::List"
        if kind == "object" and "additionalProperties" in prop:
            return "F::Map"
        raise SystemExit(f"typed_fields.py: no field type for {name}: {json.dumps(prop)[:200]}")

    def visit(type_name):
        if type_name in emitted:
            return
        schema = schemas[type_name]
        emitted[type_name] = None
        whole_object = "x-kubernetes-group-version-kind" in schema
        fields = []
        for name, prop in schema.get("properties", {}).items():
            # An embedded object (a StatefulSet's claim templates) as Terraform has it:
            # metadata and spec.
            if whole_object and name in ("apiVersion", "kind", "status"):
                continue
            fields.append((name, field_type(name, prop)))
        emitted[type_name] = fields
        order.append(type_name)

    for root in ROOTS:
        visit(root)

    out = sys.stdout
    out.write("// Generated by providers/kubernetes/typed_fields.py from the OpenAPI v3 documents of\n")
    out.write(f"// Kubernetes {version}; do not edit. Kubernetes' names and types, in its order.\n\n")
    out.write("use crate::typed_vocabulary::{F, OBJECT_META};\n")
    for type_name in sorted(order):
        out.write(f"\n/// {type_name}\n")
        out.write(f"pub(crate) const {const_name(type_name)}: &[(&str, F)] = &[\n")
        for name, ty in emitted[type_name]:
            out.write(f"    (\"{name}\", {ty}),\n")
        out.write("];\n")


if __name__ == "__main__":
    main(sys.argv[1:])
