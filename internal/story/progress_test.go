package story

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestProgressLineSaysWhatIsWrongInOneShortLine(t *testing.T) {
	for _, c := range []struct {
		name, msg, want string
	}{{
		name: "an unreachable primary",
		msg: `east, where the application runs, is unreachable: failed to get VolumeReplicationGroup crash-free/db: cluster east does not answer: ` +
			`failed to list VolumeReplicationGroups: Get "https://127.0.0.1:22884/apis/drover.io/v1alpha1/volumereplicationgroups?limit=1&timeout=5s": ` +
			`dial tcp 127.0.0.1:22884: connect: connection refused; set action Failover to start it on the peer`,
		want: "east, where the application runs, is unreachable: cluster east does not answer: connection refused; set action Failover to start it on the peer",
	}, {
		name: "a short message stays as it is",
		msg:  "west's VolumeReplicationGroup is Secondary",
		want: "west's VolumeReplicationGroup is Secondary",
	}, {
		name: "a long one is cut at a word",
		msg: "waiting for west's VolumeReplicationGroup to be Secondary with the final sync done: west's VolumeReplicationGroup: DataReady is False (PVCInUse): " +
			"PVC crash-free/data-db-0 is in use by VolumeAttachment csi-5069673cd37ab315735b7394a99605b4e601f41ce238bb3d300636d0717d68ab (node west-node-2); " +
			"the workload must be stopped on this cluster; drover demotes the PVC once nothing uses it (and 2 more PVCs)",
		want: "waiting for west's VolumeReplicationGroup to be Secondary with the final sync done: west's VolumeReplicationGroup: DataReady is False (PVCInUse): PVC…",
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := progressLine(c.msg)
			if got != c.want {
				t.Errorf("progressLine:\n got %q\nwant %q", got, c.want)
			}
			if n := utf8.RuneCountInString(got); n > maxProgressLine {
				t.Errorf("%d characters, more than %d", n, maxProgressLine)
			}
			if strings.Contains(got, "://") {
				t.Errorf("the line holds a URL: %q", got)
			}
		})
	}
}
