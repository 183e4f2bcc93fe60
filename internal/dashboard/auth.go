package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"sync"
)

// cookiePrefix begins the name of the dashboard's session cookie, which ends with the port the
// dashboard serves on (cookieName).
const cookiePrefix = "drover_dashboard_"

// cookieName is the session cookie of the dashboard at host (host:port, the request's Host).
// Browsers keep cookies by host and ignore ports: every dashboard and every other service on
// 127.0.0.1 shares one cookie store. A name of its own per port keeps two dashboards open at
// once (two hubs, two people's kubeconfigs) from overwriting each other's session, and a
// service on another port that sets drover_dashboard (or any other port's name) from signing
// this one in or out. It does not keep the browser from sending the cookie to another service
// on 127.0.0.1 that the person opens: docs/security.md says what that service could do.
func cookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil || port == "" {
		port = "80"
	}
	return cookiePrefix + port
}

// access holds the one-time token of the printed URL and the session it is exchanged for.
type access struct {
	mu sync.Mutex
	// token is the one-time token; empty once exchanged.
	token string
	// session is the cookie's value; csrf the token every form carries.
	session, csrf string
}

func newAccess() (*access, error) {
	var vals [3]string
	for i := range vals {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		vals[i] = hex.EncodeToString(b)
	}
	return &access{token: vals[0], session: vals[1], csrf: vals[2]}, nil
}

func same(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// exchange spends the one-time token: true when t is it (and it was not spent yet).
func (a *access) exchange(t string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !same(t, a.token) {
		return false
	}
	a.token = ""
	return true
}

// guard lets a request through when it carries the session cookie; a request with the
// one-time token gets the cookie and is redirected to the same page without the token. A
// request whose Host is not the server's own is refused, so a page of another site that
// resolves its name to 127.0.0.1 cannot reach the dashboard.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.host != "" && r.Host != s.host {
			http.Error(w, "wrong Host: open the dashboard at the URL `drover dashboard` printed", http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
			if !s.access.exchange(t) {
				http.Error(w, "this token was already used or is wrong: restart `drover dashboard` for a new URL, or open it in the browser that used it", http.StatusForbidden)
				return
			}
			// Not Secure: the dashboard serves plain http on 127.0.0.1 (Listen), where a Secure
			// cookie would never be sent back; it is HttpOnly and SameSite=Strict.
			http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: s.access.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}) //nolint:gosec // G124: http on loopback only

			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(cookieName(r.Host))
		if err != nil || !same(c.Value, s.access.session) {
			http.Error(w, "not signed in: open the URL with the token that `drover dashboard` printed", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// csrfOK says whether a form carries the session's CSRF token.
func (s *Server) csrfOK(r *http.Request) bool { return same(r.PostFormValue("csrf"), s.access.csrf) }
