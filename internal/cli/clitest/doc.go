// Package clitest is the test harness of the CLI's packages: builders of the hub's objects
// (an Env of two DRClusters and a DRPolicy per test, DRPlacementControls and the statuses the
// hub would write) over the API server that each package's TestMain starts with
// internal/lab/labtest and hands over with Use, and the assertions the verbs' tests share.
// Only tests import it.
package clitest
