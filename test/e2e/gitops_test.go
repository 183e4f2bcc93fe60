//go:build !argocd

package e2e

// gitOps is the GitOps tool the suite's lab runs: none; `-tags argocd` (make test-e2e) runs Argo
// CD, which CI does not build.
const gitOps = ""
