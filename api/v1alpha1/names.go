package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxSecretNameLength is the longest name of a Secret (a DNS subdomain).
const maxSecretNameLength = 253

// VolSyncKeySecretName is the name of the rsync-tls key Secret of a PVC protected by the group
// vrgName: "<vrg>-<pvc>-volsync-key", shortened with a hash when it would be too long. It is the
// same on both clusters. The VolSync backend names the Secret by it on the agents, and the hub
// reads it to check what a secondary reports (a rule both read, so the hub needs no backend).
func VolSyncKeySecretName(vrgName, pvcName string) string {
	return BoundedName(fmt.Sprintf("%s-%s-volsync-key", vrgName, pvcName))
}

// BoundedName returns name, or when it is longer than a Secret's or PVC's name may be, its head
// and a hash of the whole, so distinct long names stay distinct. A head cut right after a dot
// loses the dot: a label may not start with the hash's '-'.
func BoundedName(name string) string {
	if len(name) <= maxSecretNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(name[:maxSecretNameLength-len(suffix)], ".") + suffix
}
