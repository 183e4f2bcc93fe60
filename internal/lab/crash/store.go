package crash

import (
	"context"

	"github.com/drover-io/drover/internal/objectstore"
)

// Store returns s behind the Injector: its puts and deletes are writes, and a killed instance
// reads nothing either.
func (i *Injector) Store(s objectstore.Store) objectstore.Store { return &store{Store: s, i: i} }

type store struct {
	objectstore.Store
	i *Injector
}

func (s *store) Put(ctx context.Context, key string, body []byte) error {
	return s.i.write("s3 put "+s.Name()+"/"+key, func() error { return s.Store.Put(ctx, key, body) })
}

func (s *store) PutIf(ctx context.Context, key string, body []byte, version string) error {
	return s.i.write("s3 conditional put "+s.Name()+"/"+key, func() error { return s.Store.PutIf(ctx, key, body, version) })
}

func (s *store) Delete(ctx context.Context, key string) error {
	return s.i.write("s3 delete "+s.Name()+"/"+key, func() error { return s.Store.Delete(ctx, key) })
}

func (s *store) DeletePrefix(ctx context.Context, prefix string) error {
	return s.i.write("s3 delete prefix "+s.Name()+"/"+prefix, func() error { return s.Store.DeletePrefix(ctx, prefix) })
}

func (s *store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.i.alive(); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}

func (s *store) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := s.i.alive(); err != nil {
		return nil, "", err
	}
	return s.Store.GetVersion(ctx, key)
}

func (s *store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := s.i.alive(); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, prefix)
}

// GetCurrent implements objectstore.CurrentKeyReader for the store below.
func (s *store) GetCurrent(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.i.alive(); err != nil {
		return nil, false, err
	}
	return objectstore.GetCurrent(ctx, s.Store, key)
}

// GetVersionCurrent implements objectstore.CurrentKeyReader for the store below.
func (s *store) GetVersionCurrent(ctx context.Context, key string) ([]byte, string, bool, error) {
	if err := s.i.alive(); err != nil {
		return nil, "", false, err
	}
	return objectstore.GetVersionCurrent(ctx, s.Store, key)
}
