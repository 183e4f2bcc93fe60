// Package deployer is the lab's stand-in for a GitOps tool in placement mode (Argo CD's
// ApplicationSet clusterDecisionResource generator, OCM's subscriptions): it reads the OCM
// PlacementDecisions of one placement on the hub and keeps a set of manifests applied on every
// managed cluster the decisions name and absent from every other cluster it knows.
//
//   - deployer.go: Deployer, its Run loop, the per-cluster apply and removal, Status.
//   - manifests.go: LoadDir, reading the manifests of a directory of multi-document YAML files.
//   - testdata/app: a demo application (a StatefulSet of lab writers and its headless Service)
//     that tests of this package and the hub's placement mode deploy.
//
// It is lab code: production packages never import it.
package deployer
