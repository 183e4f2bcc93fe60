package drill

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The agent's steps, in order (DrillStep.Name).
const (
	StepCopyingVolumes    = "CopyingVolumes"
	StepRestoringObjects  = "RestoringObjects"
	StepStartingWorkloads = "StartingWorkloads"
	StepChecking          = "Checking"
	// StepReadiness is the one step of a readiness-mode sandbox.
	StepReadiness = "CheckingReadiness"
)

// maxMessage bounds the messages the status keeps (the API's limit).
const maxMessage = 1024

// clip shortens a message to what the status keeps.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}

// step returns the status's step of that name, begun now if it has not begun.
func (sc *scope) step(name string) *v1alpha1.DrillStep {
	steps := sc.sandbox.Status.Steps
	for i := range steps {
		if steps[i].Name == name {
			return &steps[i]
		}
	}
	sc.sandbox.Status.Steps = append(steps, v1alpha1.DrillStep{Name: name, Started: ptrTime(sc.now)})
	return &sc.sandbox.Status.Steps[len(sc.sandbox.Status.Steps)-1]
}

// waiting records what a running step waits for.
func (sc *scope) waiting(name, msg string) {
	s := sc.step(name)
	if s.Finished == nil {
		s.Message = clip(msg)
	}
	sc.sandbox.Status.Message = clip(msg)
}

// finish ends a step with its result, once.
func (sc *scope) finish(name string, result v1alpha1.DrillResult, msg string) {
	s := sc.step(name)
	if s.Finished != nil {
		return
	}
	s.Finished, s.Result, s.Message = ptrTime(sc.now), result, clip(msg)
}

// fail ends a step and the sandbox as Failed: the hub tears it down.
func (sc *scope) fail(name, msg string) {
	sc.finish(name, v1alpha1.DrillResultFailed, msg)
	sc.sandbox.Status.Result = v1alpha1.DrillResultFailed
	sc.sandbox.Status.Message = clip(msg)
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
