# syntax=docker/dockerfile:1

# HELM_SOURCE=none builds the image without helm, for builders that cannot reach get.helm.sh;
# BuildKit then skips the download stage entirely. Stacks with helm_release need helm.
ARG HELM_SOURCE=download

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The target directory is a cache mount, so the binary is copied out of it to reach the next
# stage.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p gpustack \
    && install -D -m 0755 target/release/gpustack /out/gpustack

# Runs on the build platform and fetches the binary for the target one, so that a multi-arch
# build does not run curl under emulation.
FROM --platform=$BUILDPLATFORM debian:bookworm-slim AS helm-download
ARG HELM_VERSION=v3.22.0
ARG TARGETARCH
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /tmp/helm
RUN set -eu; \
    archive="helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz"; \
    curl -fsSLO "https://get.helm.sh/${archive}"; \
    curl -fsSLO "https://get.helm.sh/${archive}.sha256sum"; \
    sha256sum -c "${archive}.sha256sum"; \
    tar -xzf "${archive}"; \
    install -D -m 0755 "linux-${TARGETARCH}/helm" /out/helm

FROM scratch AS helm-none
WORKDIR /out

FROM helm-${HELM_SOURCE} AS helm

FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="gpustack" \
      org.opencontainers.image.description="GPU infrastructure on Kubernetes as code: plan, apply and check GPU nodepools, the GPU Operator and GPU sharing from HCL stacks" \
      org.opencontainers.image.source="https://github.com/gpustack-dev/gpustack" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/gpustack /usr/local/bin/gpustack
COPY --from=helm /out/ /usr/local/bin/
USER nonroot:nonroot
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/gpustack"]
