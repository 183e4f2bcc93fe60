package records

import (
	"fmt"
	"slices"
	"strings"
)

// Divergence is how two copies of a volume, a and b, differ, writer by writer.
type Divergence struct {
	// Identical is set when every writer has the same records in both.
	Identical bool               `json:"identical"`
	Writers   []WriterDivergence `json:"writers"`
}

// WriterDivergence is how one writer's records differ between a and b.
type WriterDivergence struct {
	Writer string `json:"writer"`
	// LastCommonSeq is the highest sequence number both have (0: none).
	LastCommonSeq uint64 `json:"lastCommonSeq"`
	// OnlyInA are the records b is missing; OnlyInB those a is missing.
	OnlyInA      []Range `json:"onlyInA,omitempty"`
	OnlyInB      []Range `json:"onlyInB,omitempty"`
	OnlyInACount uint64  `json:"onlyInACount"`
	OnlyInBCount uint64  `json:"onlyInBCount"`
}

// Compare compares the records of two copies of a volume.
func Compare(a, b Report) Divergence {
	var ids []string
	for _, w := range append(slices.Clone(a.Writers), b.Writers...) {
		if !slices.Contains(ids, w.Writer) {
			ids = append(ids, w.Writer)
		}
	}
	slices.Sort(ids)
	d := Divergence{Identical: true, Writers: []WriterDivergence{}}
	for _, id := range ids {
		wa, _ := a.Writer(id)
		wb, _ := b.Writer(id)
		pa, pb := wa.present(), wb.present()
		wd := WriterDivergence{
			Writer:  id,
			OnlyInA: subtract(pa, pb),
			OnlyInB: subtract(pb, pa),
		}
		if common := intersect(pa, pb); len(common) > 0 {
			wd.LastCommonSeq = common[len(common)-1].Last
		}
		wd.OnlyInACount, wd.OnlyInBCount = count(wd.OnlyInA), count(wd.OnlyInB)
		if wd.OnlyInACount+wd.OnlyInBCount > 0 {
			d.Identical = false
		}
		d.Writers = append(d.Writers, wd)
	}
	return d
}

// Describe says in a line how the writer's records differ, naming the copies aName and bName.
func (w WriterDivergence) Describe(aName, bName string) string {
	if w.OnlyInACount+w.OnlyInBCount == 0 {
		if w.LastCommonSeq == 0 {
			return "identical (no records)"
		}
		return fmt.Sprintf("identical up to %d", w.LastCommonSeq)
	}
	parts := []string{"no common record"}
	if w.LastCommonSeq > 0 {
		parts[0] = fmt.Sprintf("last common record %d", w.LastCommonSeq)
	}
	if w.OnlyInACount > 0 {
		parts = append(parts, fmt.Sprintf("%s is missing %s (%d records)", bName, FormatRanges(w.OnlyInA), w.OnlyInACount))
	}
	if w.OnlyInBCount > 0 {
		parts = append(parts, fmt.Sprintf("%s is missing %s (%d records)", aName, FormatRanges(w.OnlyInB), w.OnlyInBCount))
	}
	return strings.Join(parts, "; ")
}

// FormatRanges writes up to four ranges and how many more there are: "3, 8..9".
func FormatRanges(rs []Range) string {
	const shown = 4
	var parts []string
	for i, r := range rs {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(rs)-shown))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

func count(rs []Range) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// subtract returns the numbers in a that are not in b; both are ordered, disjoint ranges.
func subtract(a, b []Range) []Range {
	var out []Range
	j := 0
	for _, r := range a {
		first := r.First
		for j < len(b) && b[j].Last < first {
			j++
		}
		for k := j; k < len(b) && b[k].First <= r.Last && first <= r.Last; k++ {
			if b[k].First > first {
				out = append(out, Range{First: first, Last: b[k].First - 1})
			}
			first = b[k].Last + 1
		}
		if first <= r.Last {
			out = append(out, Range{First: first, Last: r.Last})
		}
	}
	return out
}

// intersect returns the numbers in both a and b; both are ordered, disjoint ranges.
func intersect(a, b []Range) []Range {
	var out []Range
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].First, b[j].First), min(a[i].Last, b[j].Last)
		if lo <= hi {
			out = append(out, Range{First: lo, Last: hi})
		}
		if a[i].Last < b[j].Last {
			i++
		} else {
			j++
		}
	}
	return out
}
