package story

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/records"
)

func TestATornTwinNamesTheRecordsThatLackTheirTwin(t *testing.T) {
	at := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		lastA, lastB uint64
		want         records.Range
		wantLine     string
	}{
		{"the second volume copied later, ahead of the first", 100, 103, records.Range{First: 101, Last: 103},
			"db-0: data-db-0 ends at record 100 (written 22:00:00.000), log-db-0 at record 103 (written 22:00:00.600, 600ms later): records 101..103 lack their twin in data-db-0"},
		{"the first volume copied later, two records ahead", 105, 103, records.Range{First: 104, Last: 104},
			"db-0: data-db-0 ends at record 105 (written 22:00:00.600), log-db-0 at record 103 (written 22:00:00.000, 600ms earlier): records 104 lack their twin in log-db-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tt := TornTwin{Pod: "db-0", Writer: "ns.db-0.1234abcd", PVCA: "data-db-0", PVCB: "log-db-0", LastA: tc.lastA, LastB: tc.lastB,
				WroteA: at, WroteB: at.Add(600 * time.Millisecond)}
			if tc.lastA > tc.lastB {
				tt.WroteA, tt.WroteB = tt.WroteB, tt.WroteA
			}
			g.Expect(tt.Records()).To(Equal(tc.want))
			g.Expect(tt.String()).To(Equal(tc.wantLine))
		})
	}
}
