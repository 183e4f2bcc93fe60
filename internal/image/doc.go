// Package image builds drover's container image without a container engine, with
// go-containerregistry: one layer per platform holding the static drover binary, CA certificates
// for S3 endpoints and the passwd and group entries of the numeric non-root user 65532, an image
// config that runs the binary as that user, and an OCI image index over linux/amd64 and
// linux/arm64.
//
// It owns:
//   - Build, which turns prebuilt binaries into an index. The same binaries and Options give the
//     same index digest: every timestamp is Options.Created, tar entries are written in a fixed
//     order with fixed owners and modes, and the layer is gzipped once, here, with a fixed header.
//   - WriteLayout, WriteTarball and Push, the three ways out: an OCI layout directory, a
//     docker-archive tarball of one platform's image for `docker load` and `podman load`, and a
//     registry reference.
//   - Sizes, the compressed and uncompressed size of each platform's image.
//
// It does not compile drover: the caller (make image) builds the binaries with CGO_ENABLED=0 and
// -trimpath, so that they are static and reproducible.
package image
