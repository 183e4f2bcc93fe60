// Package vrglab is the one test harness of the VolumeReplicationGroup reconciler's lab tests,
// shared by the test packages that hold them: internal/agent/vrg (every lab test but VolSync's)
// and internal/agent/vrg/volsynclab (the VolSync lab tests). Each of them starts its own lab, so
// `go test -p N ./...` runs them at once; a lab test stops and starts clusters, so the tests of
// one package run one after another in its lab.
//
// A test package's TestMain calls Run: it starts the lab and an agent in-process on east and on
// west for the whole package (StartAgent, StopAgent for a test that stops a cluster), counts
// every API request and S3 write of those agents by cluster and namespace (Writes), and tears
// everything down after the tests. The rest are the builders and checks the packages share:
// the lab's S3 profiles and stores, a primary group, writer StatefulSets, a group's role, its
// conditions and events, the records of an image on the lab's storage, a lab kubelet whose pods
// run as processes so that exec hooks run in them (StartKubelet, OnKubelet).
//
// It is test code: only tests import it.
package vrglab
