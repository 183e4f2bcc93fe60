// Package chart generates the templates and CRDs of drover's Helm charts, charts/drover-hub and
// charts/drover-agent, from the kustomize trees the release manifests are built from (config/hub,
// config/agent and its cert-manager overlay) and from config/prometheus/prometheusrule.yaml, so
// that the charts and the release manifests cannot drift apart: `make charts` (run by `make
// generate`) writes them, and a test fails when the committed charts differ from what it writes.
//
// Why generate rather than write the templates by hand and compare: the release manifests are
// what drover's own tests install (the lab, config's tests), so they stay the one source; a
// change to config/ (an RBAC rule from a marker, a flag of the Deployment) reaches the charts by
// running the generator, not by a second hand edit that a test would only catch afterwards. The
// charts are committed, not built at release time, so that a GitOps tool can install them from
// the repository (Argo CD's and Flux's Helm sources read a chart from a Git path).
//
// How: each object of `kustomize build` becomes one template file, templates/<kind>-<name>.yaml,
// starting with a header that marks it generated. The values a person changes are spliced in at
// fixed places (hooks.go): the Deployment's image, replicas, resources, scheduling, strategy and
// extra args; every object's labels and annotations; the objects a value turns off (the
// Namespace, the metrics Service, the metrics reader ClusterRole, the agent's
// PodDisruptionBudget). A chart with several trees (the agent: its own certificate or
// cert-manager's) selects each tree's objects with a value, and an object that differs between
// the trees is written once per tree. The CRDs go to crds/, unchanged: Helm installs them before
// the templates and never upgrades or deletes them (docs/install.md says what to do instead).
// The values that are not spliced but written in values.yaml (replicas, resources, the image
// and the chart's appVersion) must equal the release manifests': Generate refuses to write the
// charts otherwise, naming the value to change.
//
// Rendered with its default values, a chart is the release manifest object for object:
// hack/helm's tests render it with Helm's own engine and compare, install it through Helm into
// the lab, and check what `make release` packages.
package chart
