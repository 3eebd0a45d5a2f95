package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/claudopilot/claudopilot/proc"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/promote"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
	"github.com/claudopilot/claudopilot/web"
)

// WebTokenFile is the web API's token, in the state folder.
const WebTokenFile = "web-token"

// startWeb serves the API and page of this run when LISTEN is set, until
// ctx ends. It returns the listeners the event fan-out feeds.
func startWeb(ctx context.Context, log io.Writer, rel func(string) string, cfg Settings, rm *roadmap.Roadmap, l state.Layout, paused bool, board *planBoard, ir *IssueRetry, refill *scanner.Refill, red *secret.Redactor) ([]func(scheduler.Event), error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	if err := web.CheckAddr(cfg.Listen, cfg.ListenPublic); err != nil {
		return nil, &SettingsError{Err: err}
	}
	origin := ""
	if cfg.ListenOrigin != "" {
		o, err := web.CheckOrigin(cfg.ListenOrigin)
		if err != nil {
			return nil, &SettingsError{Err: err}
		}
		origin = o
	}
	tok, err := web.NewToken()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(l.StateDir(), 0o755); err != nil {
		return nil, err
	}
	tokPath := filepath.Join(l.StateDir(), WebTokenFile)
	if err := writeSecretFile(tokPath, tok+"\n"); err != nil {
		return nil, fmt.Errorf("web token: %w", err)
	}
	recs, _ := state.ReadJournal(l.JournalPath())
	hist, _ := state.History(recs)
	hub := web.NewHub()
	model := web.NewModel(rm, hist, state.Rules{KeepGoing: cfg.KeepGoing, IgnoreCheckpoints: cfg.IgnoreCheckpoints}, paused)
	if len(cfg.Lanes.Lanes) > 0 {
		model.SetLanes(func() []web.Lane { return laneFigures(cfg.Lanes, l.StateDir(), board) })
	}
	model.SetFeed(feedOf(refill, l.StateDir()))
	srv := &web.Server{
		Token: tok, Model: model, Hub: hub, Redact: red, Origin: origin, Screen: screenOf(l),
		Actions: webActions{ctx: ctx, state: l.StateDir(), dir: rm.Dir, lanes: cfg.Lanes, issues: ir, refill: refill},
		Log:     func(id, role string, attempt int) (string, error) { return FindLog(l, rm, id, role, attempt) },
		Timeline: func() (status.Timeline, error) {
			recs, err := state.ReadJournal(l.JournalPath())
			if err != nil {
				return status.Timeline{}, err
			}
			return status.TimelineOf(rm, recs, time.Now()), nil
		},
		Logs: func(id string) ([]state.LogFile, error) {
			if rm.Node(id) == nil && !roadmap.IsIssueRef(id) {
				return nil, fmt.Errorf("no phase %q", id)
			}
			return l.Logs(id, ""), nil
		},
	}
	addr, err := srv.Serve(ctx, cfg.Listen, nil)
	if err != nil {
		return nil, err
	}
	code, err := srv.LoginCode()
	if err != nil {
		return nil, err
	}
	base := "http://" + addr
	if origin != "" {
		base = origin
	}
	where := filepath.Join(l.StateDir(), WebFile)
	if err := writeWebWhere(where, webWhere{Addr: addr, URL: base}); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "claudopilot: web page: %s/login?code=%s (once; `claudopilot web` prints another; the API token is in %s)\n", base, code, rel(tokPath))
	go func() {
		<-ctx.Done()
		hub.Close()
	}()
	return []func(scheduler.Event){srv.Model.Apply, hub.Publish}, nil
}

// writeSecretFile writes a new file, mode 0600 from its creation, in
// place of whatever was at path: never through a link planted there, and
// never into a file someone else holds open (O_EXCL after the removal).
func writeSecretFile(path, content string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// webActions are the page's buttons: the same switch files and manifest
// flips as the commands.
type webActions struct {
	ctx        context.Context
	state, dir string
	lanes      Lanes
	// issues reaches the queue's issues on GitHub (nil without a queue).
	issues *IssueRetry
	// refill runs the queue's scanners (nil without a refill).
	refill *scanner.Refill
}

// errNoRefill: the page's scanner buttons need a refill in this run.
var errNoRefill = errors.New("no refill runs here: scanners run with a queue that keeps polling and REFILL_THRESHOLD above 0 (`claudopilot scanners run NAME` runs one by hand)")

// ScannerRun runs a scanner now, through the run's slot pool.
func (w webActions) ScannerRun(name string) error {
	if w.refill == nil {
		return errNoRefill
	}
	return w.refill.Start(w.ctx, name)
}

// ScannerSwitch switches a scanner off or on, as `claudopilot scanners
// off|on NAME` does.
func (w webActions) ScannerSwitch(name string, on bool) error {
	if w.refill == nil {
		return errNoRefill
	}
	return w.refill.Switch(name, on)
}

// feedOf is the queue's feed as the page shows it: the scanners (the
// refill's, with the ledger's word on each) and each promote step's
// newest outcome (the promote ledger).
func feedOf(refill *scanner.Refill, stateDir string) web.FeedSource {
	return func() web.Feed {
		var f web.Feed
		if refill != nil {
			sts, _ := refill.Statuses() // an unreadable ledger: no runs shown
			for _, st := range sts {
				sc := web.Scanner{Name: st.Name, From: st.From, Off: st.Off, Running: st.Running}
				if r := st.Last; r != nil {
					sc.LastRun, sc.Filed, sc.Dropped, sc.Error = r.At, r.Filed, r.Dropped, r.Error
				}
				for _, fr := range st.Filed {
					sc.Issues = append(sc.Issues, web.Filed{Number: fr.Issue, Title: fr.Title})
				}
				f.Scanners = append(f.Scanners, sc)
			}
		}
		steps, _ := promote.ReadLatest(stateDir) // unreadable: none shown
		for _, r := range steps {
			f.Promote = append(f.Promote, web.PromoteStep{From: r.From, To: r.To, Kind: r.Kind, At: r.At, PR: r.PR, Why: r.Why})
		}
		return f
	}
}

// Lane switches a lane of LANES, as `claudopilot lane on|off ID` does.
func (w webActions) Lane(id string, on bool) error {
	var ids []string
	for _, l := range w.lanes.Lanes {
		if l.ID == id {
			return SetLane(w.state, id, on)
		}
		ids = append(ids, l.ID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("no LANES are set up (see docs/lanes.md)")
	}
	return fmt.Errorf("no lane %q in LANES (%s)", id, strings.Join(ids, " "))
}

// laneFigures are the lanes as the page shows them: the mode configured,
// the pacer's last pass, and the switches as they are on disk now (a
// switch shows at once; its effect on the slots at the next pass, within
// a second).
func laneFigures(ls Lanes, stateDir string, board *planBoard) []web.Lane {
	sw, _ := control.Load(stateDir) // unreadable: every lane shows as on
	plan := board.get()
	out := make([]web.Lane, 0, len(ls.Lanes))
	for _, l := range ls.Lanes {
		f := web.Lane{ID: l.ID, Mode: string(l.Mode), Off: sw.LanesOff[l.ID]}
		for _, r := range plan.Lanes {
			if r.ID == l.ID {
				f.Want, f.Concurrency, f.Why = r.Want, r.Concurrency, r.Why
			}
		}
		out = append(out, f)
	}
	return out
}

// screenOf opens a node's agent terminal read-only, as `claudopilot
// attach` without --write does.
func screenOf(l state.Layout) func(id string) (io.ReadCloser, error) {
	return func(id string) (io.ReadCloser, error) {
		c, err := proc.DialUnix(l.AttachSocket(id))
		if err != nil {
			return nil, fmt.Errorf("no agent of %s runs on a terminal now (ATTACH=1)", id)
		}
		if _, err := c.Write([]byte{proc.AttachRead}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
}

func (w webActions) Pause() error  { return SetPaused(w.state, true) }
func (w webActions) Resume() error { return SetPaused(w.state, false) }
func (w webActions) Drain() error  { return SetDrain(w.state) }

// Answer answers node id's question asked at asked (AnswerAsked).
func (w webActions) Answer(id string, asked time.Time, text string) error {
	_, _, err := AnswerAsked(w.state, id, asked, text)
	return err
}

func (w webActions) Retry(id string) error {
	o := RetryOptions{}
	if w.issues != nil {
		o.Issues = func(context.Context) (*IssueRetry, error) { return w.issues, nil }
	}
	res, err := Retry(w.ctx, w.dir, []string{id}, o)
	if oe := (*OutsideRetryError)(nil); errors.As(err, &oe) {
		// No queue runs here: its state is on GitHub, in labels, and a
		// human asks again there.
		return fmt.Errorf("%s is an issue: label it ready again on GitHub to retry it (docs/queue.md)", id)
	}
	if err != nil {
		return err
	}
	if len(res.Done) == 0 && len(res.Already) == 0 && len(res.Issues) == 0 {
		return fmt.Errorf("%s: nothing to retry", id)
	}
	return nil
}

// FindLog finds a phase's log (or an issue's, "#12": the queue's runner
// writes them in the same layout): of a role ("" any), an attempt (0 newest).
func FindLog(l state.Layout, rm *roadmap.Roadmap, id, role string, attempt int) (string, error) {
	if rm.Node(id) == nil && !roadmap.IsIssueRef(id) {
		return "", fmt.Errorf("no phase %q", id)
	}
	switch role {
	case "", "worker", "supervisor", "reviewer", "gate", "prepare", "merge-prepare", "lockfile", "checks":
	default:
		return "", fmt.Errorf("role %q: want worker, supervisor, reviewer, gate, prepare, merge-prepare, lockfile or checks", role)
	}
	if role != "" && attempt > 0 {
		return l.LogPath(id, role, attempt), nil
	}
	if _, err := os.Stat(l.LogDir(id)); err != nil {
		return "", fmt.Errorf("%s has no logs yet", id)
	}
	// Newest first; with no role named, an agent's log before a gate's:
	// the pane is for what the agent says.
	logs := l.Logs(id, role)
	pick := ""
	for i := len(logs) - 1; i >= 0; i-- {
		lf := logs[i]
		if attempt > 0 && lf.Attempt != attempt {
			continue
		}
		if role != "" || lf.Role == "worker" || lf.Role == "supervisor" || lf.Role == "reviewer" {
			pick = lf.Path
			break
		}
		if pick == "" {
			pick = lf.Path
		}
	}
	if pick == "" {
		return "", fmt.Errorf("%s has no such log yet", id)
	}
	return pick, nil
}
