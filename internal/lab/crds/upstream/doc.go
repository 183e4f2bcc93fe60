// Package upstream knows where the upstream projects' CRDs come from (csi-addons, VolSync,
// OCM's API, external-snapshotter), finds them on this machine and downloads them. Their text is
// never in drover's tree (it is theirs; VolSync's is AGPL-3.0): SOURCES.tsv records, for each
// file, its project, repository, commit, path in the repository and sha256.
//
// The tests that compare the lab's CRDs with upstream's (TestLabCRDsMatchUpstream) or serve
// upstream's (the e2e suite), and `drover lab up --upstream-crds`, look for the files in order
// in $DROVER_UPSTREAM_APIS, in the checkout's ignored cache .cache/upstream-apis, then in
// ../shared/upstream-apis beside the checkout (Dir). A location holds them when it has every
// file of the manifest with its sum; a file whose sum differs is an error, never skipped over.
//
// `make upstream-apis` downloads each file at its pinned commit from its repository
// (raw.githubusercontent.com) into the cache, checking its sum before it lands there (Fetch);
// `make test` does so first when no location holds them (Ensure). Without network the tests
// that need the files skip, saying which command fetches them (MaySkip), unless
// DROVER_REQUIRE_UPSTREAM_APIS=1 (RequireEnv) makes their absence a failure: CI sets it, so it
// never passes without the comparison.
package upstream
