# oncebot in two stages: a Rust builder, and a small Debian runtime that runs as a non-root user.
#   docker buildx build -t oncebot .     (or DOCKER_BUILDKIT=1 docker build -t oncebot . on 20.10)
# The build needs BuildKit (for the cache mounts below): Compose v2 and buildx use it; the legacy
# builder stops with "the --mount option requires BuildKit". No `# syntax=` line: the cache
# mounts are in the frontend built into BuildKit, and a syntax line makes every cold build fetch
# a frontend image from a registry.
#   docker run --rm -e ONCEBOT__TELEGRAM__TOKEN=... oncebot serve
# docker-compose.yml next to this file runs it with Redis; docs/settings.md has the settings.

# The builder's Debian release must match the runtime's (same glibc).
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the crates.io downloads and the compiled dependencies between builds, so a
# change to oncebot's own code recompiles only oncebot. The binary is copied out of the cached
# target/ inside the same step, because a cache mount is not part of the image. The `dist`
# profile (Cargo.toml: fat LTO, one codegen unit) is the one the published bench figures used.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked --bin oncebot \
    && install -m 0755 target/dist/oncebot /usr/local/bin/oncebot

FROM debian:bookworm-slim
# oncebot bundles its own TLS roots; ca-certificates is for a Redis or Bot API server behind a
# private CA that an operator adds to the system store.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin oncebot
COPY --from=build /usr/local/bin/oncebot /usr/local/bin/oncebot
USER oncebot:oncebot
ENV ONCEBOT__HTTP__LISTEN=0.0.0.0:8080
EXPOSE 8080
# Liveness without curl: bash's /dev/tcp sends one HTTP/1.0 request to /healthz on the port of
# ONCEBOT__HTTP__LISTEN and checks for a 200. (docker-compose.yml probes /readyz instead, which
# also needs Redis.) Every role serves /healthz, /readyz and /metrics on that port; only the
# ingress role adds the webhook.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "port=${ONCEBOT__HTTP__LISTEN##*:}; exec 3<>/dev/tcp/127.0.0.1/${port:-8080} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["oncebot"]
CMD ["serve"]
