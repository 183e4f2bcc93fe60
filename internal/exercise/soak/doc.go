// Package soak runs drover's failover and relocation over and over in the lab (`drover lab
// soak`, `make soak`): one application protected once, then cycles that alternate direction so
// that two cycles cover both directions of both actions, with the story's writers and record
// checks at every step and its two-primaries watcher throughout, while the hub and the agents
// are killed (SIGKILL) at random points and restarted by the lab kubelet. It reports each cycle
// and a summary: cycles passed and failed, records (PostgreSQL: transactions) lost on relocation
// (must be 0), the worst failover loss against its bound, the longest two-primaries overlap, the
// slowest step and the kills per component.
//
// It drives the application with internal/story. Lab code: production code never imports it.
package soak
