package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the pages, each templates/<name>.html inside templates/layout.html.
var pageNames = []string{"fleet", "app", "plan", "result"}

// Options configure a dashboard.
type Options struct {
	// Config is the person's connection to the hub: every read and patch is theirs.
	Config *rest.Config
	// Namespace is where the applications are, unless AllNamespaces.
	Namespace     string
	AllNamespaces bool
	// Prometheus is the base URL of a Prometheus that scrapes drover's hub; empty: no history.
	Prometheus string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is a running dashboard.
type Server struct {
	opts   Options
	c      client.WithWatch
	pages  map[string]*template.Template
	access *access
	live   *broadcaster
	// host is the Host a request must name (the listener's address); empty accepts any, for
	// tests through httptest.
	host string
}

// New returns a dashboard over the person's connection. It reads nothing yet.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("the dashboard needs the hub's connection")
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("failed to register types: %w", err)
		}
	}
	cfg := rest.CopyConfig(o.Config)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of the hub at %s: %w", cfg.Host, err)
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("failed to parse the dashboard's page %s: %w", name, err)
		}
		pages[name] = t
	}
	a, err := newAccess()
	if err != nil {
		return nil, fmt.Errorf("failed to make the dashboard's token: %w", err)
	}
	return &Server{opts: o, c: c, pages: pages, access: a, live: newBroadcaster()}, nil
}

// Token is the one-time token of the URL to open.
func (s *Server) Token() string { return s.access.token }

// Handler serves the dashboard, behind its access check.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.fleetPage)
	mux.HandleFunc("GET /apps/{namespace}/{name}", s.appPage)
	mux.HandleFunc("GET /apps/{namespace}/{name}/plan", s.planPage)
	mux.HandleFunc("POST /apps/{namespace}/{name}/act", s.act)
	mux.HandleFunc("GET /clusters/{name}/plan", s.massPlanPage)
	mux.HandleFunc("POST /clusters/{name}/act", s.massAct)
	mux.HandleFunc("GET /events", s.events)
	return s.guard(mux)
}

// Listen binds 127.0.0.1 on port (0: a free one) and returns the listener and the URL to
// open, with the one-time token.
func (s *Server) Listen(port int) (net.Listener, string, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, "", fmt.Errorf("failed to listen on 127.0.0.1:%d: %w", port, err)
	}
	s.host = l.Addr().String()
	return l, fmt.Sprintf("http://%s/?token=%s", s.host, s.access.token), nil
}

// Serve follows the hub's changes and serves the dashboard on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	go s.follow(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("the dashboard stopped: %w", err)
	}
	return nil
}

// Follow starts the watch that feeds the live updates, until ctx ends; Serve calls it, a
// test serving Handler through httptest calls it itself.
func (s *Server) Follow(ctx context.Context) { go s.follow(ctx) }

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}
