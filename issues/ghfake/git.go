package ghfake

import (
	"net/http"
	"strings"

	"github.com/claudopilot/claudopilot/internal/githttp"
)

// GitURL is the origin's clone URL over HTTP, as github.com serves a
// private repository: https://github.com/<owner>/<repo>.git. Every request
// needs a token the fake knows as the password of HTTP Basic
// authentication (any user name; x-access-token for an app's), else 401
// with WWW-Authenticate, which makes git ask its credential helpers.
func (s *Server) GitURL() string { return s.srv.URL + s.gitPrefix() }

func (s *Server) gitPrefix() string { return "/" + s.opt.Owner + "/" + s.opt.Repo + ".git" }

// OnGitRequest has f called at each git request, once the token is known
// good and before git answers, while the client's git waits (a test looks
// at the client's processes then).
func (s *Server) OnGitRequest(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onGit = f
}

// handler routes git's requests to git http-backend, the rest to the API.
func (s *Server) handler(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, s.gitPrefix()+"/") {
		s.serveGit(w, r)
		return
	}
	s.serve(w, r)
}

// serveGit is the smart HTTP protocol through git http-backend over the
// origin, pushes included, for a known, unexpired token.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	_, pass, ok := r.BasicAuth()
	s.mu.Lock()
	login := s.token[pass]
	exp := s.expires[pass]
	expired := !exp.IsZero() && !s.now().Before(exp)
	on := s.onGit
	s.mu.Unlock()
	if !ok || login == "" || expired {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	if on != nil {
		on()
	}
	githttp.Serve(w, r, s.git.Env, s.opt.Origin, s.gitPrefix(), login)
}
