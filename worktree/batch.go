package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// batchIdle is how long an unused resolver lives: long enough to serve a
// landing's many lookups, short enough that no git outlives a run by much.
const batchIdle = 3 * time.Second

// resolver is one long-lived `git cat-file --batch-command` (git 2.36) in
// the client's directory. Every name the driver resolves (a branch's tip,
// the base's, rev^{commit}) is an info command written to it instead of a
// `git rev-parse` process (a landing resolved names ~8 times, issue 25 §1),
// and every object it reads (the done check's docs, the trees a manifest
// flip rewrites) a contents command instead of a `cat-file --batch`. git reads a
// ref's file at each lookup and looks in the object store again when an
// object is missing, so the answers are those rev-parse gives now. It
// exits after batchIdle unused, and dies with the driver (dieWithUs).
type resolver struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	idle *time.Timer
	used bool // used since the idle timer last fired
	// keep, while true, keeps it past batchIdle unused: a run keeps its
	// resolvers (KeepResolvers) until it ends.
	keep *atomic.Bool
}

// errBatch says the resolver could not answer; the caller asks git the
// old way (rev-parse, a cat-file of its own).
var errBatch = errors.New("cat-file --batch-command unavailable")

// lookup resolves spec through the resolver: its object id, or ErrNoRev
// when git says it is missing or ambiguous. errBatch (wrapped) means the
// process failed; it is stopped and the next lookup starts another.
func (c *Client) lookup(ctx context.Context, spec string) (string, error) {
	objs, err := c.batch(ctx, "info", spec)
	if err != nil {
		return "", err
	}
	if objs[0].missing {
		return "", ErrNoRev
	}
	return objs[0].id, nil
}

// object is one answer of the resolver: missing, or the object's id, type
// and (for contents) its bytes.
type object struct {
	missing  bool
	id, kind string
	data     []byte
}

// batch asks the resolver one command (info or contents) per spec, in one
// round: the answers in the order of specs. errBatch (wrapped) means the
// process failed or cannot be asked; it is stopped and the next call
// starts another.
func (c *Client) batch(ctx context.Context, command string, specs ...string) ([]object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var q strings.Builder
	for _, s := range specs {
		if s == "" || strings.ContainsAny(s, "\n\x00") {
			return nil, errBatch
		}
		q.WriteString(command + " " + s + "\n")
	}
	r := c.locks().resolverFor(c)
	defer c.guardFor(nil)()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		if err := r.start(c); err != nil {
			return nil, err
		}
	}
	r.used = true
	p := r.cmd.Process
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	out, err := r.ask(q.String(), specs, command == "contents")
	if err != nil {
		r.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", errBatch, err)
	}
	return out, nil
}

// ask writes the commands and reads git's answers: per spec a line
// "<id> <type> <size>" (then, with contents, size bytes and a newline) or
// "<spec> missing|ambiguous".
func (r *resolver) ask(q string, specs []string, contents bool) ([]object, error) {
	if _, err := io.WriteString(r.in, q); err != nil {
		return nil, err
	}
	return readObjects(r.out, specs, contents)
}

// readObjects reads cat-file's answers to specs (the format of --batch,
// --batch-check and --batch-command alike).
func readObjects(rd *bufio.Reader, specs []string, contents bool) ([]object, error) {
	out := make([]object, len(specs))
	for i, spec := range specs {
		line, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, spec+" "); ok && (rest == "missing" || rest == "ambiguous") {
			out[i].missing = true
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || len(f[0]) < 40 {
			return nil, fmt.Errorf("unexpected answer %q to %q", line, spec)
		}
		out[i].id, out[i].kind = f[0], f[1]
		if !contents {
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("unexpected answer %q to %q", line, spec)
		}
		out[i].data = make([]byte, n+1)
		if _, err := io.ReadFull(rd, out[i].data); err != nil {
			return nil, err
		}
		out[i].data = out[i].data[:n:n]
	}
	return out, nil
}

// start runs git cat-file --batch-command in the client's directory, with the
// client's environment and the driver's hardened settings.
func (r *resolver) start(c *Client) error {
	cmd := c.command(context.Background(), "", nil, []string{"cat-file", "--batch-command"})
	cmd.WaitDelay = 0
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", errBatch, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", errBatch, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %v", errBatch, err)
	}
	r.cmd, r.in, r.out = cmd, in, bufio.NewReader(out)
	if r.idle == nil {
		r.idle = time.AfterFunc(batchIdle, r.expire)
	} else {
		r.idle.Reset(batchIdle)
	}
	return nil
}

// expire closes the resolver when it was not used for batchIdle.
func (r *resolver) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	if r.used || r.keep != nil && r.keep.Load() {
		r.used = false
		r.idle.Reset(batchIdle)
		return
	}
	r.close()
}

// close ends the process (EOF on its input ends it; a kill if it was
// already killed) and waits for it. r.mu is held.
func (r *resolver) close() {
	if r.cmd == nil {
		return
	}
	_ = r.in.Close()
	_ = r.cmd.Wait()
	r.cmd, r.in, r.out = nil, nil, nil
}

// KeepResolvers keeps (true) the long-lived git processes of the
// client's repository, every environment's, past batchIdle unused, until
// KeepResolvers(false) and Close: a run keeps them from its start to its
// end, so a pause between two landings (a gate, an agent) longer than
// batchIdle does not start another (issue 25 §1: on ext4 at load 40 the
// resolver started 9 times in a run of 10 phases).
func (c *Client) KeepResolvers(keep bool) { c.locks().keep.Store(keep) }

// Close ends the client's long-lived git processes now (they end by
// themselves after batchIdle unused, unless kept).
func (c *Client) Close() {
	l := c.locks()
	l.resMu.Lock()
	rs := l.resolvers
	l.resolvers = nil
	l.resMu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
		r.close()
		r.mu.Unlock()
	}
}

// resolverFor is the resolver of c's directory and environment, shared by
// the Clients of one repository that run git alike.
func (l *repoLocks) resolverFor(c *Client) *resolver {
	key := c.Dir + "\x00" + strings.Join(c.Env, "\x00")
	l.resMu.Lock()
	defer l.resMu.Unlock()
	if l.resolvers == nil {
		l.resolvers = map[string]*resolver{}
	}
	r := l.resolvers[key]
	if r == nil {
		r = &resolver{keep: &l.keep}
		l.resolvers[key] = r
	}
	return r
}

// readBatch reads the objects specs name, their contents included: through
// the resolver, or when it cannot answer, one `cat-file --batch`.
func (c *Client) readBatch(ctx context.Context, specs ...string) ([]object, error) {
	objs, err := c.batch(ctx, "contents", specs...)
	if !errors.Is(err, errBatch) {
		return objs, err
	}
	q := strings.Join(specs, "\n") + "\n"
	out, err := c.run(ctx, "", []byte(q), nil, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	return readObjects(bufio.NewReader(bytes.NewReader(out)), specs, true)
}
