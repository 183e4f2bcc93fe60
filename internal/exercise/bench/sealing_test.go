package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

// agentScrape is an agent's sealing counters as its /metrics shows them, on two profiles.
func agentScrape(t *testing.T, sealSecs, seals, sealBytes, openSecs, opens, openBytes float64) snapshot {
	t.Helper()
	var b strings.Builder
	for _, c := range []struct {
		name  string
		value float64
	}{
		{sealSeconds, sealSecs}, {sealedObjects, seals}, {sealedBytes, sealBytes},
		{openSeconds, openSecs}, {openedObjects, opens}, {openedBytes, openBytes},
	} {
		// The value is split over two profiles, as an agent with two stores reports it.
		b.WriteString("# TYPE " + c.name + " counter\n")
		b.WriteString(c.name + `{cluster="east",profile="s3-east"} ` + ftoa(c.value/4) + "\n")
		b.WriteString(c.name + `{cluster="east",profile="s3-west"} ` + ftoa(3*c.value/4) + "\n")
	}
	s, err := parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestSealingIsTheCountersGrowthOverBothProfilesAndCountsARestartedAgentFromItsStart(t *testing.T) {
	earlier := agentScrape(t, 2, 100, 40000, 4, 300, 90000)
	later := agentScrape(t, 3, 180, 60000, 6, 500, 150000)
	restarted := agentScrape(t, 0.5, 20, 8000, 1, 60, 20000)
	cases := []struct {
		name          string
		before, after snapshot
		want          Sealing
	}{
		{"the growth between the scrapes", earlier, later,
			Sealing{Seal: time.Second, Open: 2 * time.Second, Seals: 80, Opens: 200, SealedBytes: 20000, OpenedBytes: 60000}},
		{"an agent restarted in between counts from its start", later, restarted,
			Sealing{Seal: 500 * time.Millisecond, Open: time.Second, Seals: 20, Opens: 60, SealedBytes: 8000, OpenedBytes: 20000}},
		{"an agent started during the step counts from its start", nil, restarted,
			Sealing{Seal: 500 * time.Millisecond, Open: time.Second, Seals: 20, Opens: 60, SealedBytes: 8000, OpenedBytes: 20000}},
		{"an agent stopped during the step counts nothing", earlier, nil, Sealing{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sealingOf(c.before, c.after); got != c.want {
				t.Errorf("sealingOf = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestTheAgentsCPUIsTheirDroverProcessesOnEastAndWestOnly(t *testing.T) {
	before := []lab.ProcessCPU{
		{PID: 1, Cluster: lab.Hub, Component: lab.ComponentDrover, CPU: time.Second},
		{PID: 2, Cluster: lab.East, Component: lab.ComponentDrover, CPU: 2 * time.Second},
		{PID: 3, Cluster: lab.West, Component: lab.ComponentDrover, CPU: 3 * time.Second},
		{PID: 4, Cluster: lab.East, Component: "kube-apiserver", CPU: 10 * time.Second},
	}
	after := []lab.ProcessCPU{
		{PID: 1, Cluster: lab.Hub, Component: lab.ComponentDrover, CPU: 5 * time.Second},
		{PID: 2, Cluster: lab.East, Component: lab.ComponentDrover, CPU: 4 * time.Second},
		{PID: 3, Cluster: lab.West, Component: lab.ComponentDrover, CPU: 6 * time.Second},
		{PID: 4, Cluster: lab.East, Component: "kube-apiserver", CPU: 30 * time.Second},
	}
	if got := agentCPU(cpuProfileOf(before, after, time.Minute, 2)); got != 5*time.Second {
		t.Errorf("agentCPU = %s, want 5s (east's 2s and west's 3s; not the hub's nor the API server's)", got)
	}
}

func TestTheTableShowsSealingsShareOfTheAgentsCPU(t *testing.T) {
	r := Result{PVCs: 1, N: 100, AgentCPU: 200 * time.Second,
		Sealing: Sealing{Seal: 300 * time.Millisecond, Open: 700 * time.Millisecond, Seals: 1200, Opens: 5000, SealedBytes: 3 << 20, OpenedBytes: 512 << 10}}
	row := strings.Join(r.row(), " | ")
	for _, want := range []string{"| 200.00s | 0.300s / 0.700s (0.50%) | 1200, 3.0 MiB / 5000, 512.0 KiB |"} {
		if !strings.Contains(row, want) {
			t.Errorf("the row lacks %q:\n%s", want, row)
		}
	}
	empty := Result{PVCs: 1, N: 1}
	if cells := empty.row(); cells[len(cells)-3] != "-" || cells[len(cells)-2] != "-" {
		t.Errorf("a run that measured nothing shows %q and %q, want -", cells[len(cells)-3], cells[len(cells)-2])
	}
}
