#!/usr/bin/env bash
# generate.sh regenerates everything controller-gen owns; never edit its output by hand:
#   - deepcopy code (zz_generated.deepcopy.go) for api/ and internal/extapi/;
#   - drover's CRDs, its install, into config/crd/bases/;
#   - the CRDs of the external APIs drover drives (csi-addons replication, VolSync, OCM Placement
#     and PlacementDecision, and VolumeSnapshot from the external-snapshotter client module)
#     into internal/lab/crds/external/, for the lab and tests only;
#   - the ClusterRoles of drover's processes, from the +kubebuilder:rbac markers next to their code:
#     the agent's into config/rbac/agent/role.yaml, the hub's own (on the hub cluster) into
#     config/rbac/hub/role.yaml. What the hub may do on a managed cluster is hand-written in
#     config/rbac/hub-on-managed-cluster/ and is not touched here.
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

# rbac ROLE DIR PKGDIR... writes the ClusterRole ROLE of the markers under the package directories
# into DIR/role.yaml. controller-gen writes nothing when there is no marker (or no package yet);
# the role is then written with no rules, so the kustomization in DIR always builds.
rbac() {
  local role=$1 dir=$2 tmp paths=()
  shift 2
  for d in "$@"; do
    if [[ -d $d ]]; then
      paths+=("paths=./$d/...")
    fi
  done
  tmp=$(mktemp -d)
  if ((${#paths[@]})); then
    "$cg" "rbac:roleName=$role,headerFile=hack/boilerplate.yaml.txt" "${paths[@]}" output:rbac:dir="$tmp" ||
      { rm -rf "$tmp"; return 1; }
  fi
  if [[ ! -f $tmp/role.yaml ]]; then
    { cat hack/boilerplate.yaml.txt
      printf -- '---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\nrules: []\n' "$role"
    } >"$tmp/role.yaml"
  fi
  mkdir -p "$dir"
  mv "$tmp/role.yaml" "$dir/role.yaml"
  rm -rf "$tmp"
}

rbac drover-agent config/rbac/agent internal/agent
rbac drover-hub config/rbac/hub internal/hub
