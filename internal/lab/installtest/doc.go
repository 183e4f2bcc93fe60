// Package installtest holds the tests of the lab's install mode (lab.InstallManifests): drover
// installed from its release manifests, its clusters joined, its pods run by the lab kubelet.
// It has its own package so that its lab is the only one its tests share.
package installtest
