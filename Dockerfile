# quiver's container image. See README, "Image, chart and release".
#
#   docker build -t quiver \
#     --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker run -p 8080:8080 -p 9090:9090 \
#     -v "$PWD/servers.yaml:/etc/quiver/servers.yaml:ro" \
#     -v "$PWD/auth-token:/run/secrets/quiver/auth-token:ro" \
#     -v quiver-state:/var/lib/quiver quiver
#
# The build downloads Go modules and nothing else: no apt, apk or curl, in
# either stage. deploy/dockerfile_test.go runs this file's "go build" line as
# is (flags, CGO_ENABLED, ldflags) and the binary it makes.

# The Go of go.mod's toolchain, pinned.
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
# Pure Go (modernc's sqlite), so a static binary that runs on an image
# without a libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildDate=${DATE}" -o /out/quiver ./cmd/quiver

# distroless static: CA certificates (remote servers over https), tzdata,
# /etc/passwd with "nonroot" (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/quiver /usr/local/bin/quiver
# Numeric, so Kubernetes' runAsNonRoot can check it without /etc/passwd.
USER 65532:65532
# The ledger (grants, audit, approvals), pins and reload status.
ENV QUIVER_STATE_DIR=/var/lib/quiver
VOLUME ["/var/lib/quiver"]
# MCP (streamable HTTP at /mcp) and metrics (/metrics, /healthz, /readyz).
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/quiver"]
# servers.yaml comes from a mounted file (read-only is fine: quiver only
# watches it, and follows a change live). quiver will not listen beyond
# loopback without a bearer token: it comes from a mounted secret file,
# readable by uid 65532 (docker compose "secrets:", a Kubernetes Secret
# volume), or from QUIVER_AUTH_TOKEN once this flag is dropped.
CMD ["serve", "--http", "0.0.0.0:8080", "--metrics", "0.0.0.0:9090", "--config", "/etc/quiver/servers.yaml", "--auth-token-file", "/run/secrets/quiver/auth-token"]
