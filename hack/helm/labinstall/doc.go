// Package labinstall installs drover's Helm charts into the lab through Helm's SDK, upgrades
// them, runs a protection and a failover with the drover so installed, and uninstalls them. Its
// tests share one lab, started in TestMain with the charts in place of the release manifests.
package labinstall
