package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine is what the figures were measured on.
type Machine struct {
	CPUs     int
	MemTotal int64
	Go       string
	When     time.Time
}

// ThisMachine describes the machine the benchmark runs on.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), When: time.Now().UTC()}
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return m
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			m.MemTotal = kb * 1024
		}
	}
	return m
}

func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs, %.1f GiB memory, %s, %s", m.CPUs, float64(m.MemTotal)/(1<<30), m.Go, m.When.Format("2006-01-02 15:04 UTC"))
}

func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
