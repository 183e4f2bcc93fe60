package process

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStatCPUAddsUserAndSystemTimeAfterAFreeFormName(t *testing.T) {
	// A command name may hold spaces and parentheses; the fields count from the last ')'.
	stat := []byte("4242 (kube (api) server) S 1 4242 4242 0 -1 4194560 9 0 0 0 1234 56 7 8 20 0 12 0 100 0 0")
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 12900 * time.Millisecond; got != want {
		t.Errorf("parseStatCPU = %s, want %s (utime 1234 + stime 56 ticks of 10 ms)", got, want)
	}
	for _, bad := range []string{"4242 kube-apiserver S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 9 0 0 0 12x 56 7"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) must fail", bad)
		}
	}
}

func TestTheCPUOfThisProcessGrowsWithItsWork(t *testing.T) {
	before, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn until the kernel's own account (getrusage) says 300 ms of CPU were spent, however
	// loaded the machine is: the wall time says nothing of the CPU a busy process gets.
	start := rusageCPU(t)
	for deadline := time.Now().Add(time.Minute); rusageCPU(t)-start < 300*time.Millisecond; { //nolint:revive // burn CPU
		if time.Now().After(deadline) {
			t.Fatal("this process got less than 300 ms of CPU in a minute")
		}
	}
	after, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 250*time.Millisecond {
		t.Errorf("/proc counted %s of CPU for 300 ms that getrusage counted", after-before)
	}
}

// rusageCPU is the user and system CPU this process spent, as getrusage reports it.
func rusageCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestThisProcessIsAliveAndAReapedChildIsNot(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(child.Process.Pid) {
		t.Errorf("child %d exited and was reaped but is alive", child.Process.Pid)
	}
	if RSSKiB(child.Process.Pid) != 0 {
		t.Errorf("a process that is gone has no resident memory")
	}
}

func TestRSSReadsVmRSSInBytes(t *testing.T) {
	got, err := parseRSS([]byte("Name:\tkube-apiserver\nVmPeak:\t  900 kB\nVmRSS:\t  352256 kB\nThreads:\t12\n"), 7)
	if err != nil || got != 352256*1024 {
		t.Errorf("parseRSS = %d, %v; want %d", got, err, 352256*1024)
	}
	for _, bad := range []string{"Name:\tkthreadd\nThreads:\t1\n", "VmRSS:\t 12x kB\n"} {
		if _, err := parseRSS([]byte(bad), 7); err == nil {
			t.Errorf("parseRSS(%q) must fail", bad)
		}
	}
	if self, err := RSS(os.Getpid()); err != nil || self <= 0 || RSSKiB(os.Getpid()) <= 0 {
		t.Errorf("this process's RSS is %d, %v", self, err)
	}
}
