//go:build browser

package dashlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover-io/drover/internal/dashboard"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

var testLab *labtest.Lab

func TestMain(m *testing.M) {
	labtest.MainWith(m, labtest.Released(), func(l *labtest.Lab) { testLab = l })
}

// appName is the name the story gives every application's DRPlacementControl.
const appName = "db"

// browserTimeout bounds the whole walk through the pages, the failover included.
const browserTimeout = 8 * time.Minute

func TestAFailoverStartedFromThePageIsFollowedLiveUntilAvailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), browserTimeout)
	defer cancel()
	app := deployProtected(ctx, t)
	url := serveDashboard(ctx, t)
	artifacts := artifactsDir(t)

	bctx, stop := newBrowser(ctx, t)
	defer stop()
	row := chromedp.CSS(fmt.Sprintf(`tr[data-app="%s/%s"]`, app.Namespace, appName))
	do(t, bctx, "open the fleet page", chromedp.Navigate(url), chromedp.WaitVisible(row), screenshot(artifacts, "1-fleet.png"))
	fleet := value(t, bctx, "read the application's row", chromedp.Text(row))
	for _, want := range []string{"Deployed", "east", "✓ True"} {
		if !strings.Contains(fleet, want) {
			t.Errorf("the fleet page's row of the application does not show %q: %q", want, fleet)
		}
	}
	t.Logf("the fleet page's row: %s", strings.Join(strings.Fields(fleet), " "))

	do(t, bctx, "open the application and its failover plan",
		chromedp.Click(row+" a"),
		chromedp.WaitVisible(chromedp.ID("primary")),
		waitText("#primary", "east"),
		screenshot(artifacts, "2-app-protected-on-east.png"),
		chromedp.Click(chromedp.CSS(`a[href$="plan?action=Failover&to=west"]`)),
		chromedp.WaitVisible(chromedp.ID("plan")),
		chromedp.SendKeys(chromedp.ID("confirm"), appName),
		screenshot(artifacts, "3-plan-confirmed.png"))

	began := time.Now()
	do(t, bctx, "submit the failover and follow it without a reload",
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.ID("primary")),
		void(chromedp.Evaluate[bool](watchPhases)),
		void(chromedp.Poll[bool](`window.__phases !== undefined && document.querySelector('#last-action').textContent.includes('Available') &&
			document.querySelector('#primary').textContent.trim() === 'west'`, chromedp.WithPollingTimeout(browserTimeout))))
	took := time.Since(began)
	phases := value(t, bctx, "read the phases the page showed", chromedp.Evaluate[[]string](`window.__phases`))
	samePage := value(t, bctx, "read the page's mark", chromedp.Evaluate[bool](`window.__samePage === true`))
	last := value(t, bctx, "read the last action", chromedp.Text(chromedp.ID("last-action")))
	do(t, bctx, "take the last screenshot", screenshot(artifacts, "4-app-available-on-west.png"))
	if !samePage {
		t.Errorf("the page was reloaded while the failover ran")
	}
	if len(phases) < 2 {
		t.Errorf("the page showed no progress before Available, only %q", phases)
	}
	if !strings.Contains(last, "Failover to west") || !strings.Contains(last, "took") {
		t.Errorf("the last action does not say the failover to west and its duration: %q", last)
	}
	fmt.Printf("dashboard: click to Available on west in %.1f s; the page showed %s; last action: %s; screenshots in %s\n",
		took.Seconds(), strings.Join(phases, " → "), strings.Join(strings.Fields(last), " "), artifacts)
}

// watchPhases records each phase the page's live part shows, from the moment it is loaded
// after the form's redirect, and marks the page so a reload would lose the mark.
const watchPhases = `(function () {
  window.__samePage = true;
  window.__phases = [document.querySelector('#phase').textContent.trim()];
  new MutationObserver(function () {
    var p = document.querySelector('#phase');
    if (!p) { return; }
    var text = p.textContent.trim();
    if (window.__phases[window.__phases.length - 1] !== text) { window.__phases.push(text); }
  }).observe(document.getElementById('live'), { childList: true, subtree: true, characterData: true });
  return true;
})()`

// deployProtected deploys the demo's StatefulSet on east and protects it with a
// DRPlacementControl, then waits until it is Deployed, Protected and PeerReady.
func deployProtected(ctx context.Context, t *testing.T) story.Case {
	t.Helper()
	env, err := story.LabEnv(testLab.Lab, labtest.LogWriter(t))
	if err != nil {
		t.Fatal(err)
	}
	env.Timeout = 4 * time.Minute
	c, err := story.LabCase(string(story.StatefulSetKeepsPVCs), lab.PolicyVolRep, string(story.SelfContained))
	if err != nil {
		t.Fatal(err)
	}
	c.Namespace, c.Replicas = "demo", 1
	f := story.NewFleet(env, []story.Case{c}, lab.East)
	began := time.Now()
	if err := f.Deploy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateDRPCs(ctx, map[string]string{"dashboard": "browser"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AwaitAll(ctx, "protect", map[string]string{"dashboard": "browser"}, began, f.Protected); err != nil {
		t.Fatal(err)
	}
	return c
}

// serveDashboard serves the dashboard with the lab hub's kubeconfig and returns its URL with
// the one-time token.
func serveDashboard(ctx context.Context, t *testing.T) string {
	t.Helper()
	hub, err := testLab.Cluster(lab.Hub)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hub.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, err := dashboard.New(dashboard.Options{Config: cfg, AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	l, url, err := s.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ctx, l) }()
	return url
}

// newBrowser starts headless Chromium (root needs --no-sandbox).
func newBrowser(ctx context.Context, t *testing.T) (context.Context, func()) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: `make test-dashboard` installs it with apt-get (%v)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	return bctx, func() { cancelBrowser(); cancelAlloc() }
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// void drops an action's value.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, tg)
		return chromedp.Void{}, err
	}
}

// waitText waits until the element's text is want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return void(chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q) !== null && document.querySelector(%q).textContent.trim() === %q`, sel, sel, want)))
}

func screenshot(dir, name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name), png, 0o644)
	}
}

// artifactsDir is _artifacts/dashboard at the repository's root, made empty.
func artifactsDir(t *testing.T) string {
	t.Helper()
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "_artifacts", "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
