package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
)

// Record is one line of the run journal: an append-only JSON-lines file
// from which a restarted driver rebuilds its counters.
type Record struct {
	Time    time.Time `json:"t"`
	Phase   string    `json:"phase,omitempty"`
	Event   string    `json:"ev"`
	Role    Role      `json:"role,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Reason  Reason    `json:"reason,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	PGID    int       `json:"pgid,omitempty"`
	Until   time.Time `json:"until,omitzero"`
	Tip     string    `json:"tip,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	WaitsOn string    `json:"waits_on,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Log     string    `json:"log,omitempty"`
	Lane    string    `json:"lane,omitempty"`
	// Cmd is the agent command a cooldown holds (the loop keys cooldowns
	// by command).
	Cmd string `json:"cmd,omitempty"`
	// Rules are a run's eligibility settings ("run" records, one at each
	// start).
	Rules *Rules `json:"rules,omitempty"`
	// Slots are every lane's slots after the pacer (or `claudopilot
	// lanes`) changed them ("lanes" records), by lane id ("" the one lane
	// without LANES).
	Slots map[string]int `json:"slots,omitempty"`
	Files []string       `json:"files,omitempty"`
	// Found marks an outcome no agent ran for (Outcome.Found): not an
	// attempt.
	Found bool `json:"found,omitempty"`
	// Usage is an attempt's spend ("usage" records).
	Usage *ledger.Usage `json:"usage,omitempty"`
	// Title and Deps describe a node from outside the manifest ("node"
	// records: an issue's title and what it waits on).
	Title string   `json:"title,omitempty"`
	Deps  []string `json:"deps,omitempty"`
	// Campaign is a "node" record's campaign ("" none).
	Campaign string `json:"campaign,omitempty"`
}

// Journal appends records to a file. Appends come from the loop and from
// worker goroutines (process group ids), so the file has its own lock.
//
// Every record is written to the file at once, so another process (status,
// a restarted driver after a kill) reads it at once. Reaching the disk is
// separate: Write leaves the record to the next Sync, and Append syncs at
// once. As the file only grows, what a power loss keeps is always a prefix
// of it: the state of a driver killed a little earlier. So a record needs
// an fsync of its own only where something outside the journal must not
// run ahead of it (the driver fsyncs a landing's records once, before the
// landing is reported); the others share that fsync.
type Journal struct {
	path  string
	mu    sync.Mutex // guards f, dirty and syncs
	f     *os.File
	dirty bool // written since the last fsync
	syncs int  // fsyncs made, for the benchmarks and tests
	now   func() time.Time
	// redact is the driver's redaction funnel (SetRedact); nil: none.
	redact func(string) string
	// size is where the file ended after the driver's last write: another
	// end means another process wrote it (own).
	size int64
	// dev and ino name the file the driver writes: another at the path
	// means it was replaced (own).
	dev, ino uint64
	// warn says that another process wrote the journal (SetWarn).
	warn func(string)
}

// SetWarn has warn told, in one line, each time the journal is found
// written by another process than the driver (an agent without the
// sandbox). Call it before the first write.
func (j *Journal) SetWarn(warn func(string)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.warn = warn
}

// SetRedact passes every record's texts through redact (the driver's
// redaction funnel) before they are written. Call it before the first
// write.
func (j *Journal) SetRedact(redact func(string) string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.redact = redact
}

// OpenJournal opens (or creates) the journal at path for appending.
func OpenJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, st, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	j := &Journal{path: path, f: f, size: st.Size, dev: uint64(st.Dev), ino: uint64(st.Ino), now: time.Now}
	// A driver killed mid-record (SIGKILL cuts a write of more than a
	// page short; a power cut loses a tail) left a torn last line: this
	// driver's first record must not be glued to it and lost with it.
	if err := j.endLine(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// endLine ends the file's last line if it is not ended: the next record
// then starts a line of its own.
func (j *Journal) endLine() error {
	if j.size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := j.f.ReadAt(last[:], j.size-1); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := j.f.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("journal append: %w", err)
	}
	j.size++
	return nil
}

// openAppend opens the journal at path for appending (and reading its
// last byte), not through a link, and returns what fstat says of it.
func openAppend(path string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, st, fmt.Errorf("journal: %w", err)
	}
	err = unix.Fstat(int(f.Fd()), &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, st, fmt.Errorf("journal: %w", err)
	}
	return f, st, nil
}

// own makes sure the next record goes to the file at the journal's path,
// after whatever another process wrote there, on a line of its own. The
// journal is the driver's, but an agent without the sandbox can write it:
// a forged answer to its own question, a copy holding one renamed over
// the journal, a torn last line that would swallow the driver's next
// record (the question it asks). Whatever it wrote then comes before the
// driver's next record, which parses: the driver's last word on a phase
// stays the last (a restarted driver still waits on the question). A
// link put in the journal's place fails closed.
func (j *Journal) own() error {
	// One lstat per record, into a unix.Stat_t (no allocation): the file
	// at the path is ours (device and inode) and ends where our last
	// record did, or someone else wrote it.
	var st unix.Stat_t
	err := unix.Lstat(j.path, &st)
	if err == nil && uint64(st.Dev) == j.dev && uint64(st.Ino) == j.ino && st.Size == j.size {
		return nil
	}
	if err != nil || uint64(st.Dev) != j.dev || uint64(st.Ino) != j.ino {
		f, fst, err := openAppend(j.path)
		if err != nil {
			return fmt.Errorf("the journal was replaced by another process: %w", err)
		}
		j.f.Close()
		j.f, st = f, fst
		j.dev, j.ino = uint64(st.Dev), uint64(st.Ino)
	}
	if j.warn != nil {
		j.warn(fmt.Sprintf("the journal %s was written by another process while this driver ran (an agent without the sandbox?); its records go on after what that process wrote", j.path))
	}
	j.size = st.Size
	return j.endLine()
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// Append writes one record and fsyncs the journal (it and every record
// written before it).
func (j *Journal) Append(r Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.write(r); err != nil {
		return err
	}
	return j.sync()
}

// Write writes one record and leaves its fsync to the next Sync or
// Append: readers see it at once, and a killed driver loses none of it.
func (j *Journal) Write(r Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.write(r)
}

// Sync fsyncs the records written since the last fsync; with none, it
// does nothing.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sync()
}

// Syncs is how many fsyncs the journal has made.
func (j *Journal) Syncs() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncs
}

// Unsynced is true when records wait for an fsync.
func (j *Journal) Unsynced() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dirty
}

func (j *Journal) write(r Record) error {
	if r.Time.IsZero() {
		r.Time = j.now().UTC()
	}
	if j.redact != nil {
		// The texts a record carries (a failure's detail, a command):
		// ids, paths and hashes are the driver's own.
		r.Detail, r.Cmd, r.Title = j.redact(r.Detail), j.redact(r.Cmd), j.redact(r.Title)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := j.own(); err != nil {
		return err
	}
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("journal append: %w", err)
	}
	j.size += int64(len(b))
	j.dirty = true
	return nil
}

func (j *Journal) sync() error {
	if !j.dirty {
		return nil
	}
	j.syncs++
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal sync: %w", err)
	}
	j.dirty = false
	return nil
}

// Close fsyncs what is left and closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	serr := j.sync()
	if err := j.f.Close(); err != nil {
		return err
	}
	return serr
}

// ReadJournal returns every record in the file; a missing file is empty. A
// torn last line (the driver died mid-write) is ignored.
func ReadJournal(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// PhaseHistory is what the journal says about one phase.
type PhaseHistory struct {
	WorkerRuns, SuperRuns, SuperSpent int
	Reason                            Reason
	Detail                            string
	Last                              string // last lifecycle event: launch, done, fail, failed, blocked, merged, retry, away
	LastFailBy                        Role   // who failed last: a supervisor hands back to the worker
	Log                               string // the failing attempt's log
	Tip                               string
	WaitsOn                           string
	// Waiting is what the phase's merge waits for (uncommitted files in
	// the base checkout, a base that keeps moving), while it waits.
	Waiting      string
	WaitingFiles []string
	// Conflict is the merge conflict predicted for the phase while it
	// runs (a "conflict" record; empty when none is predicted now).
	Conflict string
	// Fresh: the phase was stopped while stacked on a dep that failed
	// ("unstacked"); its next start sets its branch aside.
	Fresh bool
	// StackTip is the dep's tip the phase was started on ("stacked"),
	// until it lands, starts over or is retried.
	StackTip string
	PGIDs    []int // process groups started and not known to have ended
	Spent    time.Duration
	// Usage adds up every attempt's reported spend; ByRole splits it.
	Usage  ledger.Usage
	ByRole map[Role]ledger.Usage
	// Session is the newest agent session per role, for AGENT_RESUME_CMD.
	Session map[Role]string
	// Question is the newest question the phase's agent asked ("ask":
	// Asked its time, AskUntil when it parks unanswered, AskRole who
	// asked); Answer the user's answer, once given ("answer"). Last says
	// whether it is open (ask), answered (answer) or past.
	Question        string
	Asked, AskUntil time.Time
	AskRole         Role
	Answer          string
	// Title, Deps and Campaign are an outside node's, from its newest
	// "node" record.
	Title      string
	Deps       []string
	Campaign   string
	launchedAt time.Time
	inFlight   Role // the role of a launch with no outcome yet
	// onLane: an agent launched with no outcome yet, on lane (LANES; ""
	// the one lane without them). Unlike inFlight, the end of the journal
	// leaves it: a live run's agent is running.
	lane   string
	onLane bool
	// lastLane is the lane of the newest attempt in the journal's newest
	// run (ranInRun); unlike lane it outlives the attempt and a retry.
	lastLane string
	ranInRun bool
	// started counts agent processes started ("pgid") since the last
	// outcome: an attempt whose driver was killed books no usage, and
	// its sessions count from these.
	started int64
}

// Rules are the settings a run decides eligibility by: its flags and
// environment as resolved, which `explain` cannot see otherwise.
type Rules struct {
	KeepGoing         bool       `json:"keep_going,omitempty"`
	IgnoreCheckpoints bool       `json:"ignore_checkpoints,omitempty"`
	Lanes             []RuleLane `json:"lanes,omitempty"`
	Slots             int        `json:"slots,omitempty"` // agents at once, over every lane
}

// RuleLane is one lane as a run's rules record it.
type RuleLane struct {
	ID            string `json:"id,omitempty"`
	Cmd           string `json:"cmd"`
	SupervisorCmd string `json:"supervisor_cmd,omitempty"`
	Fallback      string `json:"fallback,omitempty"`
	Slots         int    `json:"slots"`
	Account       string `json:"account,omitempty"` // LANE_<id>_CREDENTIALS' folder
}

// LastRules are the rules of the newest run in the journal as that run
// has them now: its lanes' slots as the pacer (or `claudopilot lanes`)
// changed them since it started ("lanes" records); nil before any run.
func LastRules(recs []Record) *Rules {
	start := lastRun(recs)
	if start < 0 || recs[start].Rules == nil {
		return nil
	}
	rules := *recs[start].Rules
	rules.Lanes = slices.Clone(rules.Lanes)
	for _, r := range recs[start+1:] {
		if r.Event != "lanes" || r.Slots == nil {
			continue
		}
		rules.Slots = 0
		for i, l := range rules.Lanes {
			if n, ok := r.Slots[l.ID]; ok {
				rules.Lanes[i].Slots = n
			}
			rules.Slots += rules.Lanes[i].Slots
		}
	}
	return &rules
}

// lastRun is the index of the newest run's "run" record, or -1.
func lastRun(recs []Record) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Event == "run" && recs[i].Rules != nil {
			return i
		}
	}
	return -1
}

// SideRuns are the lane slots the newest run has lent to side runs
// (scanners) and not had back ("side-start" and "side-end" records), by
// lane id: they are taken as a phase's agent's are.
func SideRuns(recs []Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs[lastRun(recs)+1:] {
		switch r.Event {
		case "side-start":
			out[r.Lane]++
		case "side-end":
			out[r.Lane] = max(out[r.Lane]-1, 0)
		}
	}
	return out
}

// CoolKey keys a journaled cooldown: the command it holds, and the role
// that hit it. Records from before commands were journaled have no Cmd:
// they hold every command of their role.
type CoolKey struct {
	Cmd  string
	Role Role
}

// Cooldowns are the newest cooldown deadlines the journal holds.
type Cooldowns map[CoolKey]time.Time

// For is when the cooldown on command cmd, run in role r, ends: the loop
// keys cooldowns by command, so a worker and a supervisor running one
// command share it.
func (c Cooldowns) For(cmd string, r Role) time.Time {
	var t time.Time
	for k, until := range c {
		if (k.Cmd == cmd || k.Cmd == "" && k.Role == r) && until.After(t) {
			t = until
		}
	}
	return t
}

// Latest is the newest cooldown deadline hit in role r, on any command.
func (c Cooldowns) Latest(r Role) time.Time {
	var t time.Time
	for k, until := range c {
		if k.Role == r && until.After(t) {
			t = until
		}
	}
	return t
}

// History folds the journal into per-phase counters, plus the newest
// cooldown deadline per command.
func History(recs []Record) (map[string]*PhaseHistory, Cooldowns) {
	hs := make(map[string]*PhaseHistory)
	cool := make(Cooldowns)
	for _, r := range recs {
		if r.Phase == "" {
			if r.Event == "run" {
				// A new run: no phase has run in it yet.
				for _, h := range hs {
					h.lastLane, h.ranInRun = "", false
				}
			}
			cool.book(r) // a side run's (a scanner's): its lane's breaker
			continue
		}
		h := hs[r.Phase]
		if h == nil {
			h = &PhaseHistory{}
			hs[r.Phase] = h
		}
		h.fold(r, cool)
	}
	for _, h := range hs {
		h.endOfJournal()
	}
	return hs, cool
}

// book keeps a cooldown record's deadline when it is its command's newest.
func (c Cooldowns) book(r Record) {
	if k := (CoolKey{r.Cmd, r.Role}); r.Event == "cooldown" && r.Until.After(c[k]) {
		c[k] = r.Until
	}
}

// fold adds one of the phase's records.
func (h *PhaseHistory) fold(r Record, cool Cooldowns) {
	if h.foldMarks(r) {
		return
	}
	switch r.Event {
	case "wait":
		h.Waiting, h.WaitingFiles = r.Detail, r.Files
	case "launch":
		h.launch(r)
	case "pgid":
		h.PGIDs = append(h.PGIDs, r.PGID)
		h.started++
	case "exit", "done", "fail", "interrupted", "cooldown", "transient", "ask", "poke":
		h.outcome(r, cool)
	case "answer":
		h.Answer, h.Last = r.Detail, r.Event
	case "failed", "blocked":
		h.Last = r.Event
		if r.Reason != "" {
			h.Reason = r.Reason
		}
		if r.Reason == ReasonNeedsInput && h.Question != "" {
			// Parked unanswered: the morning's reader wants the question.
			h.Detail = "no answer to: " + h.Question
		}
		h.WaitsOn = r.WaitsOn
	case "merged":
		// Finished: its counts stay for `status`; a later launch
		// (the roadmap run again) starts a new history.
		h.Last, h.Reason, h.Detail, h.WaitsOn, h.PGIDs = r.Event, "", "", "", nil
		h.lane, h.onLane = "", false
	case "away":
		// An outside node left the driver's hands (a pull request
		// handed to a human, an issue closed or claimed elsewhere):
		// Detail says why.
		h.Last, h.Detail, h.PGIDs = r.Event, r.Detail, nil
		h.lane, h.onLane = "", false
	case "retry":
		// Counters start over for a retried phase; what it spent
		// stays spent.
		h.orphanSessions()
		*h = PhaseHistory{Last: r.Event, Usage: h.Usage, ByRole: h.ByRole, Session: h.Session, Fresh: h.Fresh, Title: h.Title, Deps: h.Deps,
			lastLane: h.lastLane, ranInRun: h.ranInRun}
	case "usage":
		if r.Usage != nil {
			h.addUsage(r.Role, *r.Usage)
		}
	}
}

// foldMarks folds what a record says besides the attempts' lifecycle: an
// outside node's title and deps, what a merge waits for, a predicted
// conflict, the stack it sits on. It is true when the record says nothing
// more.
func (h *PhaseHistory) foldMarks(r Record) bool {
	if r.Event == "node" {
		h.Title, h.Deps, h.Campaign = r.Title, r.Deps, r.Campaign
		return true
	}
	if r.Event != "wait" && r.Event != "pgid" && r.Event != "conflict" {
		h.Waiting, h.WaitingFiles = "", nil
	}
	switch r.Event {
	case "conflict":
		h.Conflict = r.Detail
		return true
	case "merged", "failed", "blocked":
		h.Conflict = ""
	case "unstacked":
		h.Fresh, h.StackTip = true, ""
		return true
	case "stacked":
		h.StackTip = r.Tip
		return true
	}
	if r.Event == "done" || r.Event == "fail" || r.Event == "merged" {
		h.Fresh = false // an attempt started over since
	}
	if r.Event == "merged" {
		h.StackTip = ""
	}
	return false
}

// launch folds an agent's start.
func (h *PhaseHistory) launch(r Record) {
	h.orphanSessions()
	if h.Last == "merged" {
		*h = PhaseHistory{Title: h.Title, Deps: h.Deps}
	}
	if h.inFlight == Supervisor {
		// The repair launched before this one has no outcome: the driver
		// died during it (SIGKILL, a second Ctrl-C). The driver cut it
		// short, so it spent nothing (its log number stays used).
		h.SuperSpent--
	}
	if r.Role == Supervisor {
		h.SuperRuns = max(h.SuperRuns, r.Attempt)
		h.SuperSpent++ // spent when started
	} else {
		h.WorkerRuns = max(h.WorkerRuns, r.Attempt)
	}
	h.Last = r.Event
	h.launchedAt = r.Time
	h.inFlight = r.Role
	h.lane, h.onLane = r.Lane, true
	h.lastLane, h.ranInRun = r.Lane, true
}

// RunningOn says the lane of the agent the journal has running for the
// phase (launched, no outcome yet); ok is false when none runs. Only a
// live run's journal means it is running now.
func (h *PhaseHistory) RunningOn() (lane string, ok bool) { return h.lane, h.onLane }

// LastLane is the lane the phase's newest attempt in the journal's newest
// run ran on; ok is false when it has not run in that run. It outlives the
// attempt and a retry, as the loop's own memory of the lane does
// (scheduler.HomeLane).
func (h *PhaseHistory) LastLane() (lane string, ok bool) {
	if h == nil {
		return "", false
	}
	return h.lastLane, h.ranInRun
}

// outcome folds how an attempt ended.
func (h *PhaseHistory) outcome(r Record, cool Cooldowns) {
	// The outcome's usage record counted its sessions.
	h.started = 0
	h.PGIDs = nil
	h.inFlight = ""
	h.lane, h.onLane = "", false
	if r.Event == "interrupted" && r.Role == Supervisor {
		// The driver was stopped, not the repair: it spent nothing (the
		// log number stays used).
		h.SuperSpent--
	}
	if !h.launchedAt.IsZero() {
		h.Spent += r.Time.Sub(h.launchedAt)
		h.launchedAt = time.Time{}
	}
	if r.Event == "done" {
		h.Tip = r.Tip
	}
	if r.Event == "done" && r.Detail == FoundDone || r.Event == "fail" && r.Found {
		h.unspend(r.Role) // no agent ran: not an attempt
	}
	if r.Event == "fail" {
		h.Reason, h.Detail, h.LastFailBy = r.Reason, r.Detail, r.Role
		if r.Log != "" {
			h.Log = r.Log
		}
	}
	cool.book(r)
	if r.Event == "ask" {
		h.Question, h.Asked, h.AskUntil, h.AskRole, h.Answer = r.Detail, r.Time, r.Until, r.Role, ""
		if r.Log != "" {
			h.Log = r.Log
		}
	}
	if r.Event == "cooldown" || r.Event == "transient" || r.Event == "ask" || r.Event == "poke" {
		h.unspend(r.Role) // the retry reuses the attempt number
	}
	h.Last = r.Event
}

// unspend takes back an attempt counted at its launch.
func (h *PhaseHistory) unspend(role Role) {
	if role == Supervisor {
		h.SuperRuns--
		h.SuperSpent--
	} else {
		h.WorkerRuns--
	}
}

// endOfJournal settles what the journal left open.
func (h *PhaseHistory) endOfJournal() {
	h.orphanSessions()
	if h.inFlight == Supervisor {
		// The driver died while a repair ran (SIGKILL): no outcome, so
		// no attempt spent either.
		h.SuperSpent--
	}
	h.inFlight = ""
}

// Away is the state the journal gives a node from outside the manifest
// that left the driver's hands (its pull request handed to a human for
// review, the issue closed or claimed by another instance): no manifest
// state says that.
const Away manifest.State = "away"

// OutsideState is the state of a node from outside the manifest (an issue,
// "#12") by its last lifecycle record: no manifest line holds its state
// (its own record is on GitHub, in labels), so status reads it here.
func (h *PhaseHistory) OutsideState() manifest.State {
	switch h.Last {
	case "merged":
		return manifest.Merged
	case "blocked":
		return manifest.Blocked
	case "failed":
		return manifest.Failed
	case "away":
		return Away
	case "", "retry":
		return manifest.Pending
	}
	// launch, done, fail (a repair follows), cooldown, transient,
	// interrupted: the driver works on it, or worked on it when it
	// stopped (as a manifest line left [running]).
	return manifest.Running
}

// Culprit is the phase whose own failure holds id back: a phase parked
// because a dep failed records "waits on <that phase>", which may itself
// wait on another. It is the phase to retry (its dependents come back with
// it); id itself when it failed on its own account.
func Culprit(hist map[string]*PhaseHistory, id string) string {
	seen := map[string]bool{}
	for !seen[id] {
		seen[id] = true
		h := hist[id]
		if h == nil || h.WaitsOn == "" {
			return id
		}
		id = h.WaitsOn
	}
	return id
}

// orphanSessions books the agent processes of an attempt that has no
// outcome (its driver was killed) as sessions: they ran, whatever
// became of them (PHASE_MAX_SESSIONS).
func (h *PhaseHistory) orphanSessions() {
	if h.started > 0 {
		h.addUsage(h.inFlight, ledger.Usage{Sessions: h.started})
		h.started = 0
	}
}

// addUsage books one attempt's spend.
func (h *PhaseHistory) addUsage(r Role, u ledger.Usage) {
	h.Usage = ledger.Add(h.Usage, u)
	if h.ByRole == nil {
		h.ByRole = map[Role]ledger.Usage{}
	}
	h.ByRole[r] = ledger.Add(h.ByRole[r], u)
	if u.SessionID != "" {
		if h.Session == nil {
			h.Session = map[Role]string{}
		}
		h.Session[r] = u.SessionID
	}
}
