package worktree

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Credential gives the user name and password for the remote the driver
// fetches from and pushes to (the queue's GitHub token, or the app's
// current installation token).
type Credential func(ctx context.Context) (user, password string, err error)

// WithCredential returns a client of the same repository (sharing its
// locks) whose fetch, ls-remote and push answer the remote's credential
// request with cred, and with nothing else: not the user's credential
// helpers, nor anything in git's environment or arguments, which any
// process of the same user reads in /proc/<pid>/environ and cmdline while
// git runs. The credential goes over a pipe git inherits as fd 3; the one
// helper git is given is a shell function that copies it out on "get".
func (c *Client) WithCredential(cred Credential) *Client {
	return &Client{Dir: c.Dir, Env: c.Env, shared: c.locks(), cred: cred}
}

// credentialHelper is git's only credential helper in a remote command of
// a client with a credential: the empty value first drops every helper the
// configuration names, the user's and any an agent planted.
var credentialHelper = []string{"-c", "credential.helper=", "-c", `credential.helper=!f() { test "$1" = get && cat <&3; }; f`}

// remote runs a git command that talks to a remote (in c.Dir), with the
// client's credential when it has one.
func (c *Client) remote(ctx context.Context, args ...string) (string, error) {
	if c.cred == nil {
		return c.GitIn(ctx, "", args...)
	}
	user, pass, err := c.cred(ctx)
	if err != nil {
		return "", fmt.Errorf("git %s: the remote's credential: %w", strings.Join(args, " "), err)
	}
	if strings.ContainsAny(user+pass, "\n\x00") {
		return "", fmt.Errorf("git %s: the remote's credential holds a newline or NUL", strings.Join(args, " "))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	defer r.Close()
	// A pipe holds 64 KiB: written whole before git starts, and closed, so
	// the helper reads it to its end; unread (a local remote asks for no
	// credential), it goes with the pipe.
	_, err = fmt.Fprintf(w, "username=%s\npassword=%s\n", user, pass)
	w.Close()
	if err != nil {
		return "", fmt.Errorf("git %s: write the credential's pipe: %w", strings.Join(args, " "), err)
	}
	out, err := c.runWith(ctx, "", nil, nil, []*os.File{r}, append(append([]string(nil), credentialHelper...), args...))
	return trimNL(out), err
}
