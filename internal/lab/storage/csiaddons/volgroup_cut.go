package csiaddons

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// A group transfer cut half-way, on demand: a storage whose data directory holds the file
// CutGroupTransfersPath cuts its next group mirror (volgroup_mirror.go) at the point the file
// names, leaving on the peer what a storage controller killed at that instant leaves (its
// staged copies, its intent record, the members it had applied), and then sends no group
// mirror at all, as a sender that is gone, until the file is removed (RestoreGroupTransfers).
// What the peer then holds, and what it promotes, shows whether a cut transfer can leave half a
// group applied.

// GroupCut is a point at which CutGroupTransfers cuts a group transfer.
type GroupCut string

const (
	// GroupCutBeforeIntent cuts after every member was copied to the peer and before the intent
	// record is written: the peer must keep its previous point.
	GroupCutBeforeIntent GroupCut = "before-intent"
	// GroupCutAfterFirstMember cuts after the intent record was written and the first member's
	// image replaced: the peer must complete the point before anyone acts on it.
	GroupCutAfterFirstMember GroupCut = "after-first-member"
)

// errGroupTransferCut is what a cut transfer, and every group transfer after it, fails with.
var errGroupTransferCut = errors.New("the lab cut this storage's group transfers")

type groupCutKnob struct {
	Cut   GroupCut `json:"cut"`
	Fired bool     `json:"fired"`
}

// CutGroupTransfersPath is the knob's file in the data directory of a storage.
func CutGroupTransfersPath(dataDir string) string {
	return filepath.Join(dataDir, "cut-group-transfers.json")
}

// CutGroupTransfers makes the storage with data directory dataDir cut its next group transfer
// at cut and send no group mirror after it, until RestoreGroupTransfers.
func CutGroupTransfers(dataDir string, cut GroupCut) error {
	if cut != GroupCutBeforeIntent && cut != GroupCutAfterFirstMember {
		return fmt.Errorf("group cut %q is not %q or %q", cut, GroupCutBeforeIntent, GroupCutAfterFirstMember)
	}
	return driver.WriteJSON(CutGroupTransfersPath(dataDir), groupCutKnob{Cut: cut})
}

// GroupTransfersCut reports whether the storage with data directory dataDir has cut a transfer
// since CutGroupTransfers.
func GroupTransfersCut(dataDir string) (bool, error) {
	knob, armed, err := readGroupCutKnob(dataDir)
	return armed && knob.Fired, err
}

// RestoreGroupTransfers lets the storage with data directory dataDir send group mirrors again.
func RestoreGroupTransfers(dataDir string) error {
	if err := os.Remove(CutGroupTransfersPath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove %s: %w", CutGroupTransfersPath(dataDir), err)
	}
	return nil
}

func readGroupCutKnob(dataDir string) (groupCutKnob, bool, error) {
	var knob groupCutKnob
	err := driver.ReadJSON(CutGroupTransfersPath(dataDir), &knob)
	if errors.Is(err, os.ErrNotExist) {
		return knob, false, nil
	}
	return knob, err == nil, err
}

// cutGroupTransfer cuts the transfer under way when the knob is armed at this point.
func (s *store) cutGroupTransfer(at GroupCut) error {
	knob, armed, err := readGroupCutKnob(s.Opts.DataDir)
	if err != nil || !armed || knob.Fired || knob.Cut != at {
		return err
	}
	knob.Fired = true
	if err := driver.WriteJSON(CutGroupTransfersPath(s.Opts.DataDir), knob); err != nil {
		return err
	}
	return fmt.Errorf("%w: at %s", errGroupTransferCut, at)
}

// groupTransferDown refuses a new group transfer once the knob's cut has fired.
func (s *store) groupTransferDown() error {
	fired, err := GroupTransfersCut(s.Opts.DataDir)
	if err != nil || !fired {
		return err
	}
	return fmt.Errorf("%w: no group mirror is sent until the cut is lifted", errGroupTransferCut)
}
