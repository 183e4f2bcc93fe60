package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrUnreachable is what Fake returns for a cluster marked down, as a lost API server would
// fail every request.
var ErrUnreachable = errors.New("connection refused")

// Fake is a Gateway over given clients (controller-runtime's fake client in unit tests); a
// cluster marked down fails every request. It has no cache: every read goes to the client, and
// it sends no changes (unit tests call Reconcile themselves).
type Fake struct {
	mu      sync.Mutex
	clients map[string]client.Client
	down    map[string]bool
}

var _ Gateway = (*Fake)(nil)

// NewFake returns a Fake serving the given clients by cluster name.
func NewFake(clients map[string]client.Client) *Fake {
	return &Fake{clients: clients, down: map[string]bool{}}
}

// SetDown marks a cluster lost (true) or back (false).
func (f *Fake) SetDown(cluster string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[cluster] = down
}

// Client implements Gateway.
func (f *Fake) Client(_ context.Context, cluster string) (client.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cl, ok := f.clients[cluster]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w for DRCluster %s: no such cluster", ErrNoKubeconfig, cluster)
	case f.down[cluster]:
		return downClient{Client: cl}, nil
	}
	return cl, nil
}

// Probe implements Gateway: it lists one group through the cluster's client.
func (f *Fake) Probe(ctx context.Context, cluster string) (client.Client, error) {
	cl, err := f.Client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if err := Probe(ctx, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

// Forget implements Gateway; the Fake keeps its clients.
func (f *Fake) Forget(string) {}

// RenewToken implements Gateway: the Fake's clients hold no expiring token.
func (f *Fake) RenewToken(context.Context, string, time.Time) (Token, error) { return Token{}, nil }

// downClient fails every request, like a client of a stopped API server.
type downClient struct{ client.Client }

func (downClient) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return ErrUnreachable
}
func (downClient) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return ErrUnreachable
}
func (downClient) Create(context.Context, client.Object, ...client.CreateOption) error {
	return ErrUnreachable
}
func (downClient) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return ErrUnreachable
}
func (downClient) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return ErrUnreachable
}
func (downClient) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return ErrUnreachable
}
