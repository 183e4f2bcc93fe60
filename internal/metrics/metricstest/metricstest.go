// Package metricstest reads Prometheus collectors in tests, as a scrape would: production code
// does not import it.
package metricstest

import (
	"bytes"
	"strings"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Text returns what a scrape of c returns now, in the text format and with a newline first, so
// that every sample is a line "\n"+sample+"\n" of it. It collects through a pedantic registry,
// which also checks that c's Describe announces every metric its Collect sends.
func Text(g gomega.Gomega, c prometheus.Collector) string {
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(c)).To(gomega.Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		g.Expect(enc.Encode(f)).To(gomega.Succeed())
	}
	return "\n" + out.String()
}

// ExpectSamples checks that each line of want (blank lines at either end aside) is a sample c
// collects now, such as `drover_drpc_protected{name="app",namespace="app"} 1`.
func ExpectSamples(g gomega.Gomega, c prometheus.Collector, want string) {
	got := Text(g, c)
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		g.Expect(got).To(gomega.ContainSubstring("\n"+line+"\n"), "metrics:\n%s", got)
	}
}
