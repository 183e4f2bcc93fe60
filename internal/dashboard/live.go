package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Live updates: one watch per kind (DRPlacementControls in the dashboard's scope, DRClusters)
// for the whole server; each change is sent to every open page as a server-sent event naming
// what changed, and the page fetches its live part once.
const (
	// rewatchAfter is the pause before a watch that ended or failed is started again.
	rewatchAfter = 2 * time.Second
	// keepAlive is how often an idle event stream gets a comment, so proxies keep it open.
	keepAlive = 25 * time.Second
	// subscriberBuffer is how many events a slow page may fall behind before some are dropped
	// (the page fetches the whole live part anyway, so a dropped event loses nothing).
	subscriberBuffer = 16
)

// broadcaster fans a change out to the open pages.
type broadcaster struct {
	mu   sync.Mutex
	subs map[chan string]struct{}
}

func newBroadcaster() *broadcaster { return &broadcaster{subs: map[chan string]struct{}{}} }

func (b *broadcaster) subscribe() chan string {
	ch := make(chan string, subscriberBuffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch
}

func (b *broadcaster) unsubscribe(ch chan string) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

func (b *broadcaster) publish(what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- what:
		default:
		}
	}
}

// follow keeps a watch of the DRPlacementControls and one of the DRClusters running until ctx
// ends. A kind the person may not watch is left out (the page says what it cannot read).
func (s *Server) follow(ctx context.Context) {
	var opts []client.ListOption
	if !s.opts.AllNamespaces {
		opts = append(opts, client.InNamespace(s.opts.Namespace))
	}
	go s.watchKind(ctx, &v1alpha1.DRPlacementControlList{}, "app", opts...)
	s.watchKind(ctx, &v1alpha1.DRClusterList{}, "cluster")
}

func (s *Server) watchKind(ctx context.Context, list client.ObjectList, kind string, opts ...client.ListOption) {
	for ctx.Err() == nil {
		w, err := s.c.Watch(ctx, list, opts...)
		if apierrors.IsForbidden(err) {
			return
		}
		if err == nil {
			s.drain(ctx, w, kind)
		}
		select {
		case <-ctx.Done():
		case <-time.After(rewatchAfter):
		}
	}
}

// drain publishes each event of w until it ends.
func (s *Server) drain(ctx context.Context, w watch.Interface, kind string) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			if o, ok := ev.Object.(client.Object); ok {
				s.live.publish(kind + ":" + o.GetNamespace() + "/" + o.GetName())
			}
		}
	}
}

// events streams the changes to a page as server-sent events until the page goes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch := s.live.subscribe()
	defer s.live.unsubscribe(ch)
	fmt.Fprint(w, ": connected\n\n")
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case what := <-ch:
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", what)
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		flusher.Flush()
	}
}
