package main

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

func TestTheDemosAppFlagNamesTheStorysWorkload(t *testing.T) {
	for _, tc := range []struct {
		app, backend string
		want         story.Case
	}{
		{"writer", "", story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass, Replicas: 3, AppProcesses: true}},
		{"twin", "", story.Case{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass, Replicas: 3, AppProcesses: true}},
		{"twin", "volsync", story.Case{Workload: story.StatefulSetTwoVolumes, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Replicas: 3, AppProcesses: true}},
		{"postgres", "", story.Case{Workload: story.Postgres, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Replicas: 1, AppProcesses: true}},
	} {
		t.Run(tc.app+"/"+tc.backend, func(t *testing.T) {
			g := NewWithT(t)
			f := &demoFlags{app: tc.app, backend: tc.backend, mode: string(story.SelfContained), appProcesses: true}
			c, err := f.demoCase()
			g.Expect(err).NotTo(HaveOccurred())
			tc.want.Mode = story.SelfContained
			g.Expect(c).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	_, err := (&demoFlags{app: "mysql", mode: string(story.SelfContained)}).demoCase()
	g.Expect(err).To(MatchError(`--app "mysql": use writer, twin or postgres`))
}
