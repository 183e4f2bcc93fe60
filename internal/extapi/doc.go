// Package extapi holds minimal typed copies of the external APIs that drover drives but does not
// own, one subpackage per group and version: csi-addons replication, VolSync, OCM placement and
// the Multi-Cluster Services ServiceExport.
// Each type carries only the fields drover uses, with JSON names identical to the upstream
// schema, so drover reads and writes the real resources. Their CRDs are generated for the lab
// and tests only (internal/lab/crds); they are never part of drover's install.
package extapi
