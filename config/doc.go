// Package config holds drover's kustomize trees: the CRDs (crd), the RBAC generated from the
// markers (rbac), and the release manifests built from them, config/hub and config/agent (with
// its cert-manager overlay), which `make release-manifests` writes to dist/ and from which `make
// charts` generates the Helm charts' templates (internal/chart). Its tests build the release
// manifests with the pinned kustomize and install them on a real API server. Beside them: the
// alert rules (prometheus) and the Grafana dashboard (grafana).
package config
