package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestTheFleetPageShowsTheClustersPoliciesAndEachApplicationWithWordsBesideColours(t *testing.T) {
	b := open(t, Options{AllNamespaces: true})
	code, page := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("the fleet page answered %d:\n%s", code, page)
	}
	contains(t, page, "the fleet page",
		`<th scope="row">east</th>`, `<th scope="row">west</th>`, // the DRClusters
		`<th scope="row">pair</th>`, "east and west", // the DRPolicy and its clusters
		`href="/apps/shop/db"`, `href="/apps/other/ledger"`, "Deployed", // the applications, every namespace
		`<span aria-hidden="true">✓</span> True`, // a state is a word beside its symbol
		"/10s ok", // the RPO lag against the interval, judged ok under 2 intervals
		`href="/clusters/east/plan?action=Failover&amp;to=west"`, // the mass action of a cluster
	)
}

func TestTheRPOLagIsJudgedByTheAlertRulesThresholds(t *testing.T) {
	for _, c := range []struct {
		name string
		lag  time.Duration
		want string
	}{
		{"under two intervals is ok", 19 * time.Second, levelOK},
		{"at two intervals is still ok", 20 * time.Second, levelOK},
		{"above two intervals warns", 21 * time.Second, levelWarn},
		{"at three intervals is critical", 30 * time.Second, levelCritical},
		{"no sync recorded is unknown", -1, levelNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lagLevel(c.lag, interval); got != c.want {
				t.Errorf("lagLevel(%s, %s) = %s, want %s", c.lag, interval, got, c.want)
			}
		})
	}
}

func TestAnApplicationsPageShowsItsGroupsTimelineAndTheNoteThatHistoryNeedsPrometheus(t *testing.T) {
	b := open(t, Options{Namespace: shop})
	code, page := b.get("/apps/shop/db")
	if code != http.StatusOK {
		t.Fatalf("the application's page answered %d:\n%s", code, page)
	}
	contains(t, page, "the application's page",
		`<dd id="primary">east</dd>`, "Deployed", "Policy pair, syncing every 10s",
		`<th scope="row">east</th>`, `<th scope="row">west</th>`, // its groups
		`<th scope="row">shop/data-db</th>`, // its PVC
		"Protected True",                    // the timeline's condition transitions
		"History needs a Prometheus", "--prometheus URL",
		`href="/apps/shop/db/plan?action=Failover&amp;to=west"`, `href="/apps/shop/db/plan?action=Relocate&amp;to=west"`,
	)
}

func TestAFailoverRunsOnlyWhenTheApplicationsNameIsTypedAndTheServerChecksIt(t *testing.T) {
	b := open(t, Options{Namespace: shop})
	code, page := b.get("/apps/shop/cart/plan?action=Failover&to=west")
	if code != http.StatusOK {
		t.Fatalf("the plan page answered %d:\n%s", code, page)
	}
	contains(t, page, "the plan page", "Plan: failover shop/cart from east to west", "Expected data loss", "Verdict: failover can start",
		`name="csrf" value="`+b.srv.access.csrf+`"`, "Type <kbd>cart</kbd> to confirm")

	form := url.Values{"csrf": {b.srv.access.csrf}, "action": {"Failover"}, "to": {"west"}, "confirm": {"carts"}}
	code, page = b.post("/apps/shop/cart/act", form)
	if code != http.StatusUnprocessableEntity {
		t.Errorf("a wrong name answered %d, want 422:\n%s", code, page)
	}
	contains(t, page, "the refusal", "Not confirmed", "Nothing was changed")
	if d := drpc(t, shop, "cart"); d.Spec.Action != v1alpha1.ActionNone {
		t.Fatalf("a wrong name changed the DRPlacementControl: spec.action %q", d.Spec.Action)
	}

	form.Set("confirm", "cart")
	form.Set("csrf", "forged")
	if code, page = b.post("/apps/shop/cart/act", form); code != http.StatusForbidden {
		t.Errorf("a forged CSRF token answered %d, want 403:\n%s", code, page)
	}
	if d := drpc(t, shop, "cart"); d.Spec.Action != v1alpha1.ActionNone {
		t.Fatalf("a forged form changed the DRPlacementControl: spec.action %q", d.Spec.Action)
	}

	form.Set("csrf", b.srv.access.csrf)
	if code, page = b.post("/apps/shop/cart/act", form); code != http.StatusSeeOther {
		t.Fatalf("the confirmed failover answered %d, want 303:\n%s", code, page)
	}
	d := drpc(t, shop, "cart")
	if d.Spec.Action != v1alpha1.ActionFailover || d.Spec.FailoverCluster != "west" {
		t.Errorf("the confirmed failover asked spec.action %q to %q, want Failover to west", d.Spec.Action, d.Spec.FailoverCluster)
	}
	undo(t, d)
}

// undo takes the action back out of the spec, for the other tests.
func undo(t *testing.T, d *v1alpha1.DRPlacementControl) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"action":null,"failoverCluster":null}}`))
	if err := k8sClient.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

func TestAMassActionOfAClusterRunsOnlyWhenTheClustersNameIsTyped(t *testing.T) {
	b := open(t, Options{Namespace: shop})
	code, page := b.get("/clusters/east/plan?action=Failover&to=west")
	if code != http.StatusOK {
		t.Fatalf("the mass plan answered %d:\n%s", code, page)
	}
	contains(t, page, "the mass plan", "Plan: failover 2 applications to west", "shop", "cart", "db", "Type <kbd>east</kbd> to confirm")
	form := url.Values{"csrf": {b.srv.access.csrf}, "action": {"Failover"}, "to": {"west"}, "confirm": {"db"}}
	if code, page = b.post("/clusters/east/act", form); code != http.StatusUnprocessableEntity {
		t.Errorf("typing an application's name for a cluster's mass action answered %d, want 422:\n%s", code, page)
	}
	for _, name := range []string{"db", "cart"} {
		if d := drpc(t, shop, name); d.Spec.Action != v1alpha1.ActionNone {
			t.Fatalf("an unconfirmed mass action changed %s: spec.action %q", name, d.Spec.Action)
		}
	}

	form.Set("confirm", "east")
	code, page = b.post("/clusters/east/act", form)
	if code != http.StatusOK {
		t.Fatalf("the confirmed mass failover answered %d:\n%s", code, page)
	}
	contains(t, page, "the mass action's result", "Asked the hub to failover 2 applications to west")
	for _, name := range []string{"db", "cart"} {
		d := drpc(t, shop, name)
		if d.Spec.Action != v1alpha1.ActionFailover || d.Spec.FailoverCluster != "west" {
			t.Errorf("the confirmed mass failover asked %s for spec.action %q to %q, want Failover to west", name, d.Spec.Action, d.Spec.FailoverCluster)
		}
		undo(t, d)
	}
}

func TestAPersonBoundToOneNamespaceSeesAndMovesNothingOfAnother(t *testing.T) {
	b := open(t, Options{Config: asUser(restricted), Namespace: shop})
	code, page := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("the fleet page answered %d:\n%s", code, page)
	}
	contains(t, page, "the restricted fleet page", `href="/apps/shop/db"`, `<th scope="row">east</th>`)
	lacks(t, page, "the restricted fleet page", "ledger", "/apps/other/")

	all := open(t, Options{Config: asUser(restricted), AllNamespaces: true})
	_, page = all.get("/")
	contains(t, page, "the fleet page of every namespace", "You may not read DRPlacementControls")
	lacks(t, page, "the fleet page of every namespace", "ledger", "/apps/other/")

	code, page = b.get("/apps/other/ledger")
	if code != http.StatusForbidden {
		t.Errorf("another namespace's application answered %d, want 403:\n%s", code, page)
	}
	lacks(t, page, "another namespace's application", "Deployed", `id="primary"`)

	form := url.Values{"csrf": {b.srv.access.csrf}, "action": {"Failover"}, "to": {"west"}, "confirm": {"ledger"}}
	if code, page = b.post("/apps/other/ledger/act", form); code != http.StatusForbidden {
		t.Errorf("a confirmed failover of another namespace's application answered %d, want 403:\n%s", code, page)
	}
	if d := drpc(t, other, "ledger"); d.Spec.Action != v1alpha1.ActionNone {
		t.Fatalf("the restricted person failed over another namespace's application: spec.action %q", d.Spec.Action)
	}
}

func TestNoSecretValueReachesAnyPage(t *testing.T) {
	b := open(t, Options{AllNamespaces: true})
	for _, path := range []string{"/", "/apps/shop/db", "/apps/shop/db/plan?action=Failover&to=west", "/apps/shop/db/plan?action=Relocate&to=west",
		"/clusters/east/plan?action=Failover&to=west", "/static/live.js"} {
		code, page := b.get(path)
		if code != http.StatusOK {
			t.Errorf("%s answered %d:\n%s", path, code, page)
		}
		lacks(t, page, path, plantedValue, plantedS3Key, b.srv.access.session)
	}
}

func TestTheOneTimeTokenIsExchangedOnceAndNothingIsServedWithoutTheCookie(t *testing.T) {
	b := open(t, Options{Namespace: shop})
	if b.srv.Token() != "" {
		t.Errorf("the token is still usable after its first use")
	}
	anon := &browser{t: t, base: b.base, http: &http.Client{}}
	if code, page := anon.get("/"); code != http.StatusUnauthorized {
		t.Errorf("a request without the cookie answered %d, want 401:\n%s", code, page)
	}
	if code, _ := anon.get("/?token=" + b.srv.access.session); code != http.StatusForbidden {
		t.Errorf("a wrong token answered %d, want 403", code)
	}
	if code, _ := anon.post("/apps/shop/db/act", url.Values{"confirm": {"db"}, "action": {"Failover"}, "to": {"west"}}); code != http.StatusUnauthorized {
		t.Errorf("a form without the cookie answered %d, want 401", code)
	}
}

func TestAChangeOfAnApplicationIsSentToTheOpenPagesAsItHappens(t *testing.T) {
	b := open(t, Options{Namespace: shop})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), ": connected") {
		t.Fatalf("the event stream did not open: %q", lines.Text())
	}
	seen := make(chan string)
	go func() {
		defer close(seen)
		for lines.Scan() {
			seen <- lines.Text()
		}
	}()
	// The server's watch may start after the stream opened: change the application until the
	// stream names it (bounded by the test's timeout, not timed).
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, n)))
		if err := k8sClient.Patch(context.Background(), drpc(t, shop, "db"), patch); err != nil {
			t.Fatal(err)
		}
	wait:
		for {
			select {
			case line, ok := <-seen:
				if !ok {
					t.Fatal("the event stream ended without the change of shop/db")
				}
				if line == "data: app:shop/db" {
					return
				}
			case <-tick.C:
				break wait
			}
		}
	}
}

// Browsers keep cookies by host, not by port: two dashboards on 127.0.0.1 (two hubs, two
// kubeconfigs), or a dashboard and another local service, share one cookie store. Each
// dashboard's session cookie is named for its port, so signing in to one does not sign the
// person out of the other, and a cookie another port sets under the old name is not a session.
func TestTwoDashboardsOnOneHostKeepTheirOwnSessions(t *testing.T) {
	jar, _ := cookiejar.New(nil)
	start := func() *browser {
		s, err := New(Options{Config: adminConfig, Namespace: shop})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.Follow(ctx)
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(func() { cancel(); ts.Close() })
		return &browser{t: t, base: ts.URL, srv: s, http: &http.Client{Jar: jar}}
	}
	first, second := start(), start()
	for _, b := range []*browser{first, second} {
		if code, body := b.get("/?token=" + b.srv.Token()); code != http.StatusOK {
			t.Fatalf("signing in to %s answered %d:\n%s", b.base, code, body)
		}
	}
	u, _ := url.Parse(first.base)
	var names []string
	for _, c := range jar.Cookies(u) {
		names = append(names, c.Name)
	}
	t.Logf("the browser holds, for %s: %v", u.Host, names)
	if code, _ := first.get("/"); code != http.StatusOK {
		t.Errorf("after signing in to the second dashboard, the first answers %d: its session cookie was overwritten", code)
	}
	if code, _ := second.get("/"); code != http.StatusOK {
		t.Errorf("the second dashboard answers %d", code)
	}
	// Another service of the host sets a cookie with a dashboard's value under another port's
	// name: the first dashboard does not take it for its own session.
	other := &browser{t: t, base: first.base, http: &http.Client{}}
	req, _ := http.NewRequest(http.MethodGet, first.base+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookiePrefix + "1", Value: first.srv.access.session})
	resp, err := other.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := readBody(t, resp); code != http.StatusUnauthorized {
		t.Errorf("a session under another port's cookie name answered %d, want 401", code)
	}
}
