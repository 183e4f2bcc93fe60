// Package dashlab drives drover's dashboard in a real browser (headless Chromium through the
// DevTools protocol) against a lab that runs drover: `make test-dashboard` (build tag browser,
// not part of make test). The application is shown Protected on east, failed over from the
// page by typing its name, and followed without a reload until it is Available on west; the
// screenshots go to _artifacts/dashboard/.
package dashlab
