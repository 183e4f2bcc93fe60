// Package tools holds nothing to import: its directories are the Go modules that build the lab's
// binaries from the Go module proxy (kept out of drover's own module, so drover never depends on
// k8s.io/kubernetes), and its test keeps the versions those modules and drover share in step.
package tools
