// Package volsynclab holds the lab tests of the VolumeReplicationGroup reconciler
// (internal/agent/vrg) with the VolSync backend: protection, failover and relocation of
// applications whose PVCs VolSync replicates, the final sync, the recovery point, the movers'
// identity and the destination's address. They have a lab of their own, apart from the
// package's other lab tests, so `go test -p N ./...` runs both at once; their harness is
// internal/agent/vrg/vrglab. The package has no code besides its tests.
package volsynclab
