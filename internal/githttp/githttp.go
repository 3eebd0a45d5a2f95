// Package githttp serves a bare repository over git's smart HTTP protocol
// through git http-backend, pushes included: the origin of the tests' fake
// remotes (the fake GitHub, issues/ghfake, and worktree's credential test).
// Who may ask is the caller's rule (ghfake's tokens); this package only
// answers. Its own light package (net/http/cgi) so that a test needing a
// remote over HTTP does not link the fake GitHub and its GitHub client
// (worktree's test binary: 144 -> 110 MB of archives to link, #23).
package githttp

import (
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// backend is git-http-backend's path in git's exec path, found once: run
// as `git http-backend`, every request was two processes (git, which
// runs the dashed git-http-backend as its child). The path is a fact of
// the installed git, not state: computed once, never changed.
var backend = sync.OnceValues(func() (string, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		return "", err
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
})

// Serve answers r, a request under prefix (the repository's URL path, such
// as /owner/repo.git), from the bare repository origin: git http-backend
// with git's environment env and REMOTE_USER user.
func Serve(w http.ResponseWriter, r *http.Request, env []string, origin, prefix, user string) {
	path, err := backend()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := &cgi.Handler{
		Path: path,
		Env: append(append([]string(nil), env...),
			"GIT_PROJECT_ROOT="+filepath.Dir(origin), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER="+user),
	}
	// http-backend finds the repository from PATH_INFO, under
	// GIT_PROJECT_ROOT: the origin's own name in place of the prefix.
	r2 := r.Clone(r.Context())
	r2.Header.Del("Authorization") // not handed to the backend's environment
	r2.URL.Path = "/" + filepath.Base(origin) + strings.TrimPrefix(r.URL.Path, prefix)
	h.ServeHTTP(w, r2)
}
