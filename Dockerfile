# regcheck's image for people with Docker: the same layout as `make image`
# (internal/ociimage), which needs no Docker engine. A static binary, the
# builder's CA bundle, a non-root user (65532, distroless's "nonroot"), no
# shell and no package manager.
#
#   docker build -t regcheck:dev --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run --rm regcheck:dev scan nginx:1.27
#
# The target demo-seed is the seeding step of docker-compose.yml: it pushes
# the demo's images (hack/demo -seed) to a running registry.
#
# A test (internal/ociimage) holds USER, ENTRYPOINT, ENV and the files below
# to what make image builds.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
# As hack/image builds it: static, no path or build ID of this machine, no
# symbol table; the version and revision stamped in.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags kustomize_disable_go_plugin_support \
      -ldflags "-s -w -buildid= -X github.com/regcheck/regcheck/internal/version.stamped=${VERSION} -X github.com/regcheck/regcheck/internal/version.stampedRevision=${REVISION}" \
      -o /out/regcheck ./cmd/regcheck \
 && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/demo ./hack/demo
# The files of the base layer, as internal/ociimage writes them.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/home/nonroot /rootfs/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group \
 && printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ca-certificates.crt \
 && chmod 0700 /rootfs/home/nonroot && chmod 1777 /rootfs/tmp

# docker compose's seeding step: hack/demo -seed pushes the demo's images
# to a registry that is already running, and exits.
FROM scratch AS demo-seed
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /rootfs/home/nonroot /home/nonroot
COPY --from=build /out/demo /usr/local/bin/demo
USER 65532:65532
ENV PATH=/usr/local/bin HOME=/home/nonroot
ENTRYPOINT ["/usr/local/bin/demo", "-seed"]

# The image (the last stage: what docker build builds by default).
FROM scratch AS regcheck
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /rootfs/home/nonroot /home/nonroot
COPY --from=build /out/regcheck /usr/local/bin/regcheck
USER 65532:65532
ENV PATH=/usr/local/bin HOME=/home/nonroot
ENTRYPOINT ["/usr/local/bin/regcheck"]
