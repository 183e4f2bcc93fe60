#!/usr/bin/env bash
# generate.sh regenerates everything controller-gen owns; never edit its output by hand:
#   - deepcopy code (zz_generated.deepcopy.go) for api/ and internal/extapi/;
#   - drover's CRDs, its install, into config/crd/bases/;
#   - the CRDs of the external APIs drover drives (csi-addons replication, VolSync, OCM
#     PlacementDecision, and VolumeSnapshot from the external-snapshotter client module) into
#     internal/lab/crds/external/, for the lab and tests only.
# controller-gen is built once into bin/ from the pinned module hack/tools/codegen.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

"$root/hack/build-tools.sh" codegen
cg="$root/bin/controller-gen"

"$cg" object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./internal/extapi/...

# Clear the YAML first so that a removed kind does not leave a stale CRD behind.
rm -f config/crd/bases/*.yaml internal/lab/crds/external/*.yaml
mkdir -p config/crd/bases internal/lab/crds/external

"$cg" crd paths=./api/... output:crd:dir=config/crd/bases
"$cg" crd \
  paths=./internal/extapi/... \
  paths=github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1 \
  output:crd:dir=internal/lab/crds/external

# snapshot.storage.k8s.io is a protected group: the API server accepts its CRDs only with the
# approval annotation upstream ships. controller-gen cannot be given a marker for a package of
# another module, so the annotation is added here, as part of generation.
for f in internal/lab/crds/external/snapshot.storage.k8s.io_*.yaml; do
  grep -q 'api-approved.kubernetes.io' "$f" && continue
  sed -i 's|^  annotations:$|  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes-csi/external-snapshotter/pull/814|' "$f"
done
