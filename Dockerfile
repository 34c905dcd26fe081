# syntax=docker/dockerfile:1
#
# Herald's image: the herald binary on distroless, as a non-root user.
# The default command runs a worker; point it at Temporal with TEMPORAL_ADDRESS and
# TEMPORAL_NAMESPACE (see `herald worker --help`). Needs BuildKit (the default builder
# since Docker Engine 23, and always used by `docker compose`).

# Build on the builder's own platform and cross-compile: pure Go, no cgo.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules first, so that editing code does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
ARG TARGETOS TARGETARCH
# The caches keep rebuilds fast: the first build compiles the embedded Temporal
# server that `herald dev` carries, which takes minutes.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/herald ./cmd/herald
# herald serve's tokens directory (a volume in docker-compose.yml): created here, as the
# runtime image has no shell, and owned by its user so that a new volume is writable.
RUN mkdir -p /out/state

# distroless/static: CA certificates and time zones, no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/herald /usr/local/bin/herald
COPY --from=build --chown=65532:65532 /out/state /var/lib/herald
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["worker"]
