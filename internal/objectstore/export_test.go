package objectstore

import "time"

// SetPageSize makes an S3 store list n keys per page, so tests with a handful of objects take
// List's pagination path.
func SetPageSize(s Store, n int32) { s.(*s3Store).pageSize = n }

// Fail classifies err from op on key as the S3 store s reports it.
func Fail(s Store, op, key string, err error) error { return s.(*s3Store).fail(op, key, err) }

// SetSealClock makes m time the sealing and opening with now.
func SetSealClock(m *SealMetrics, now func() time.Time) { m.now = now }
