// Package charttest drives drover's Helm charts (charts/drover-hub, charts/drover-agent) through
// Helm's Go SDK for the tests of this module: it renders a chart as `helm template` does,
// builds the release manifests as `make release-manifests` does, to compare the two, and
// installs, upgrades and uninstalls the charts in the lab (Installer, a lab.Installer).
package charttest
