// Package e2e is drover's end-to-end suite: the lab with the hub and both agents running as
// real processes from the built binary, driven only through DRPlacementControls, for a matrix of
// workload × backend × mode. Each case runs the whole story (internal/story): deploy with the
// lab's writer, protect, failover with the primary stopped, primary back, failover back the
// other way, relocate, relocate back, unprotect, checking the records after every action and
// that the clusters never both run a writable primary. The lab serves the upstream projects' own
// CRDs (lab.Options.UpstreamCRDs), found by package upstream in $DROVER_UPSTREAM_APIS, the
// checkout's .cache/upstream-apis (`make upstream-apis`) or ../shared/upstream-apis. Without them
// the cases run on the lab's CRDs and TestTheLabServesTheUpstreamCRDs skips, naming the command
// that downloads them; DROVER_REQUIRE_UPSTREAM_APIS=1 (CI) makes that a failure.
//
// `make test` runs the seed's case (a StatefulSet that keeps its PVCs) on VolSync in placement
// mode; `make test-e2e` (DROVER_E2E=full) runs the whole matrix, PostgreSQL with its recipe's
// hooks (story.PostgresRecipe) on both backends among it. The application's pods of
// TestTheWholeStory's cases are real `drover lab writer` processes on the lab kubelets' nodes
// (story.Case.AppProcesses), writing into their mounted PVCs; DROVER_E2E_APP_PROCESSES=0 puts
// them on fake nodes instead, the lab's storage writing for them. The Argo CD case deploys its
// own manifests and keeps its pods on fake nodes. With DROVER_E2E=full the suite also loses the
// hub together with east, fails two applications over with drover failover --without-hub,
// rebuilds an empty hub (lab.RebuildHub) and restores it with drover hub restore
// (TestAHubLostWithEastIsRebuiltFromTheClustersAndTheStoryGoesOn); later cases run on that hub.
package e2e
