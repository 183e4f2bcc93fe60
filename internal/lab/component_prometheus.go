package lab

import (
	"path/filepath"
	"strconv"
)

const componentPrometheus = "prometheus"

// prometheusComponent is the lab's Prometheus (monitoring.go), beside the clusters: its
// configuration, data and logs in dir, serving on the loopback port.
func prometheusComponent(binary, dir string, port int) component {
	return component{name: componentPrometheus, binary: binary, args: []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
	}}
}
