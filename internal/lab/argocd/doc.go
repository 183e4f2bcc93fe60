// Package argocd runs a real Argo CD in the lab, in placement mode: its ApplicationSet
// clusterDecisionResource generator reads the OCM PlacementDecisions on the hub (the ones drover
// writes) and its application controller deploys to the managed clusters.
//
//   - argocd.go: Options, Start, Open, Stop and Status of an Instance.
//   - components.go: the detached processes (redis-server, repo-server, application controller,
//     applicationset controller), started, found again by a /proc scan of the instance's
//     directory and stopped through internal/lab/process, and their ports.
//   - hub.go: what Argo CD needs on the hub: its CRDs, namespace, settings, the default
//     AppProject, one cluster Secret per managed cluster and the generator's ConfigMap.
//   - gitrepo.go: the local bare git repository (file://) holding the demo application.
//   - appset.go: the demo ApplicationSet, the refresh annotation and reading an Application.
//   - app/: the demo application's manifests, a copy of internal/lab/deployer/testdata/app.
//
// The binary and files come from `make tools-argocd` (hack/build-tools.sh argocd): bin/argocd,
// bin/argocd-crds/ and bin/argocd-path/; redis-server from Debian. It is lab code: production
// packages never import it.
package argocd
