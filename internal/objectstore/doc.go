// Package objectstore keeps drover's data in S3-compatible object stores: the PV/PVC metadata and
// the captured Kubernetes objects of every VolumeReplicationGroup, written by the agent to each S3
// profile of its policy so that losing one store loses nothing.
//
// It owns:
//   - Store, the small interface the agent uses: Put, Get, List, Delete, DeletePrefix, every
//     method taking a context, every method idempotent. Keys are chosen by the caller, who
//     namespaces them (per VRG) with a prefix; the store adds none.
//   - NewS3, the implementation over aws-sdk-go-v2, built for S3-compatible servers (path-style
//     addressing, checksums only where S3 requires them) and to fail fast: a store that is down
//     answers within seconds, and the caller retries with backoff.
//   - Profile, what a client needs to reach one store, read from a Secret (ProfileFromSecret) or
//     from a VolumeReplicationGroup's S3 profile and its credentials Secret (ProfileFromSpec):
//     https://, with a CA bundle of its own if it has one, or http:// only when it says Insecure.
//   - Limits, the bounds of what reads accept (limits.go): an object larger than its key's limit
//     is refused (KindRefused) from its Content-Length before its body is read, and read through
//     an io.LimitReader otherwise; a List of more keys than the limit is refused.
//   - Error, the classification of failures (store unreachable, credentials refused, bucket
//     missing, profile invalid, object absent, object refused; Refused for callers that refuse
//     what they decode) into a condition reason and a message that says
//     what to fix; ErrNotFound and its siblings for errors.Is.
//   - Sealed, the Store every object of the agent goes through (envelope.go): each object is
//     an AES-256-GCM envelope under the profile's current store key (Keyring, keyring.go, read
//     from the profile's Secret), its key in the bucket authenticated with it; what does not
//     open, or is not an envelope, is refused (KindRefused) naming the store, the object and
//     the key ID.
//   - Fake, an in-memory Store for unit tests of its callers, with failure injection.
//
// It does not decide what is stored or when to retry; the agent does.
package objectstore
