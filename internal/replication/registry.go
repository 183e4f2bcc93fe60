package replication

import (
	"errors"
	"fmt"
	"strings"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Selection errors, for errors.Is. The *SelectionError that carries them says which class and
// what to fix.
var (
	// ErrNoBackend: no storageClassBackends entry matches the PVC's StorageClass.
	ErrNoBackend = errors.New("no replication backend matches")
	// ErrSeveralBackends: more than one entry of the same kind matches (a spec that bypassed
	// the API server's validation).
	ErrSeveralBackends = errors.New("several replication backends match")
	// ErrBackendNotAvailable: the matching entry names a backend this agent does not provide.
	ErrBackendNotAvailable = errors.New("replication backend not available")
)

// SelectionError explains why no backend could be selected for a StorageClass.
type SelectionError struct {
	// Err is ErrNoBackend, ErrSeveralBackends or ErrBackendNotAvailable.
	Err              error
	StorageClassName string
	Provisioner      string
	// Backend is the backend asked for (ErrBackendNotAvailable); Matches the matching entries
	// (ErrSeveralBackends).
	Backend v1alpha1.ReplicationBackend
	Matches []v1alpha1.StorageClassBackend
}

func (e *SelectionError) Error() string {
	class := fmt.Sprintf("StorageClass %q (provisioner %s)", e.StorageClassName, e.Provisioner)
	switch {
	case errors.Is(e.Err, ErrSeveralBackends):
		return fmt.Sprintf("storageClassBackends has %d entries for %s: %s; keep one", len(e.Matches), class, describe(e.Matches))
	case errors.Is(e.Err, ErrBackendNotAvailable):
		return fmt.Sprintf("backend %s, chosen for %s by storageClassBackends, is not implemented by this drover agent yet; choose another backend for this class", e.Backend, class)
	default:
		return fmt.Sprintf("no storageClassBackends entry names %s or its provisioner: add one", class)
	}
}

// Unwrap returns the sentinel.
func (e *SelectionError) Unwrap() error { return e.Err }

func describe(entries []v1alpha1.StorageClassBackend) string {
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.StorageClassName != "" {
			parts = append(parts, fmt.Sprintf("storageClassName %s → %s", e.StorageClassName, e.Backend))
		} else {
			parts = append(parts, fmt.Sprintf("provisioner %s → %s", e.Provisioner, e.Backend))
		}
	}
	return strings.Join(parts, ", ")
}

// Registry holds the backends an agent provides, at most one per name.
type Registry struct {
	backends map[v1alpha1.ReplicationBackend]Backend
}

// NewRegistry registers backends; two with the same name are a wiring error.
func NewRegistry(backends ...Backend) (*Registry, error) {
	r := &Registry{backends: map[v1alpha1.ReplicationBackend]Backend{}}
	for _, b := range backends {
		if b == nil {
			return nil, errors.New("a nil replication backend cannot be registered")
		}
		if _, dup := r.backends[b.Name()]; dup {
			return nil, fmt.Errorf("replication backend %s is registered twice", b.Name())
		}
		r.backends[b.Name()] = b
	}
	return r, nil
}

// Select returns the backend for PVCs of the StorageClass storageClassName whose provisioner is
// provisioner: the entry naming the class wins over the entry naming the provisioner. It fails
// with a *SelectionError when no entry matches, when several entries of the winning kind match,
// or when the chosen backend is not registered.
func (r *Registry) Select(entries []v1alpha1.StorageClassBackend, storageClassName, provisioner string) (Backend, error) {
	var byName, byProvisioner []v1alpha1.StorageClassBackend
	for _, e := range entries {
		switch {
		case e.StorageClassName != "" && e.StorageClassName == storageClassName:
			byName = append(byName, e)
		case e.StorageClassName == "" && e.Provisioner != "" && e.Provisioner == provisioner:
			byProvisioner = append(byProvisioner, e)
		}
	}
	matches := byName
	if len(matches) == 0 {
		matches = byProvisioner
	}
	selErr := &SelectionError{StorageClassName: storageClassName, Provisioner: provisioner}
	switch len(matches) {
	case 0:
		selErr.Err = ErrNoBackend
		return nil, selErr
	case 1:
	default:
		selErr.Err, selErr.Matches = ErrSeveralBackends, matches
		return nil, selErr
	}
	b, ok := r.backends[matches[0].Backend]
	if !ok {
		selErr.Err, selErr.Backend = ErrBackendNotAvailable, matches[0].Backend
		return nil, selErr
	}
	return b, nil
}

// Backend returns the registered backend of that name, if any.
func (r *Registry) Backend(name v1alpha1.ReplicationBackend) (Backend, bool) {
	b, ok := r.backends[name]
	return b, ok
}
