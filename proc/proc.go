package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoProcs says the system has no /proc (macOS): processes cannot be
// listed, so WorkingIn and LeftBehind cannot tell what runs where.
var ErrNoProcs = errors.New("supervisor: no /proc on this system")

// pollEvery is how often we look at processes we cannot wait(2) for:
// grandchildren are reparented away from us, so polling is the only way to
// see them go.
const pollEvery = 25 * time.Millisecond

// reapWait bounds how long we watch for SIGKILLed processes to disappear. A
// process in uninterruptible sleep can outlive SIGKILL for a while; we report
// that rather than hang.
const reapWait = 5 * time.Second

// Alive reports whether pid names a live process. A zombie counts as dead:
// it holds no files and runs no code, and in a container whose init does not
// reap orphans it would otherwise look alive forever.
func Alive(pid int) bool {
	if pid <= 0 {
		// kill(0) and kill(-1) address groups, not a process.
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, ok := readStat(pid)
	if !ok {
		// No /proc (or the process vanished meanwhile): trust the signal.
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	return st.state != 'Z'
}

// KillGroup stops every process in process group pgid: SIGTERM, then SIGKILL
// for whatever is still alive after grace (grace <= 0 sends SIGKILL at once).
// It returns once the group is gone; a group that is already gone is not an
// error. It is meant for agents whose pgid was journaled by a driver that
// crashed, and is also Run's own clean-up path.
func KillGroup(pgid int, grace time.Duration) error {
	if pgid <= 1 {
		// -1 would signal every process we may signal, 0 our own group.
		return fmt.Errorf("supervisor: refusing to kill process group %d", pgid)
	}
	if grace > 0 {
		if err := signalGroup(pgid, syscall.SIGTERM); err != nil {
			return err
		}
		if waitGroupGone(pgid, grace) {
			return nil
		}
	}
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
		return err
	}
	if !waitGroupGone(pgid, reapWait) {
		return fmt.Errorf("supervisor: process group %d still alive %s after SIGKILL", pgid, reapWait)
	}
	return nil
}

// signalGroup treats "no such group" as success: the goal is a dead group.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("supervisor: signal %v to process group %d: %w", sig, pgid, err)
}

func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// groupAlive ignores zombie members for the same reason Alive does.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, err := scanProcs()
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.pgrp == pgid && p.state != 'Z' {
			return true
		}
	}
	return false
}

// procStat is the part of /proc/<pid>/stat we need.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // clock ticks since boot; tells a reused pid apart
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// parseStat splits after the last ')' because the command name in between
// may itself contain spaces and parentheses.
func parseStat(b []byte) (procStat, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procStat{}, false
	}
	// Fields after the name start at field 3 (state).
	f := bytes.Fields(b[end+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, true
}

func scanProcs() ([]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoProcs
	} else if err != nil {
		return nil, fmt.Errorf("supervisor: list /proc: %w", err)
	}
	procs := make([]procStat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			procs = append(procs, st)
		}
	}
	return procs, nil
}

// descendants lists every live process below root, whatever its process
// group. Group signals miss children that called setsid/setpgid (a tool
// running a "detached" dev server, say); while root is still alive they are
// reachable through the parent links, so a kill path snapshots them.
func descendants(root int) []procStat {
	procs, err := scanProcs()
	if err != nil {
		return nil
	}
	kids := make(map[int][]procStat)
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	var out []procStat
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if seen[k.pid] {
				continue
			}
			seen[k.pid] = true
			out = append(out, k)
			queue = append(queue, k.pid)
		}
	}
	return out
}

// signalProcs signals each process only if its pid still belongs to the
// process we saw (same start time), so a pid recycled during the kill grace
// never gets hit.
func signalProcs(ps []procStat, sig syscall.Signal) {
	for _, p := range ps {
		cur, ok := readStat(p.pid)
		if !ok || cur.start != p.start || cur.state == 'Z' {
			continue
		}
		_ = syscall.Kill(p.pid, sig)
	}
}

// anyAlive reports whether any of ps (matched by start time) still runs.
func anyAlive(ps []procStat) bool {
	for _, p := range ps {
		cur, ok := readStat(p.pid)
		if ok && cur.start == p.start && cur.state != 'Z' {
			return true
		}
	}
	return false
}

// GroupAlive reports whether any live (non-zombie) process is in the
// process group.
func GroupAlive(pgid int) bool { return pgid > 1 && groupAlive(pgid) }

// InDir reports whether some process of the group works inside dir (its
// current directory is dir or below). A restarted driver uses it before
// stopping a journaled group, so a recycled group id that now belongs to
// someone else's program is left alone.
func InDir(pgid int, dir string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	procs, err := scanProcs()
	if err != nil {
		return false
	}
	for _, p := range procs {
		if p.pgrp != pgid || p.state == 'Z' {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(os.PathSeparator))) {
			return true
		}
	}
	return false
}

// WorkingIn lists the live processes other than this one whose current
// directory is dir or below it. A lock file under dir is stale only when
// this list is empty: a git that still runs there (a killed driver's, an
// agent's) may still be writing.
func WorkingIn(dir string) ([]int, error) {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, p := range procs {
		if p.pid == self || p.state == 'Z' {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(os.PathSeparator))) {
			pids = append(pids, p.pid)
		}
	}
	return pids, nil
}

// MarkVar is set in the environment of every process the driver starts, to
// "<driver pid>.<tag>". Descendants inherit it, including those that leave
// the process group (setsid daemons) and whose parent is gone, so they can
// still be found: by Run, after the attempt, and by a restarted driver.
const MarkVar = "_CLAUDOPILOT_PROC"

// Mark is the MarkVar entry for processes this driver starts, tagged tag.
func Mark(tag string) string { return fmt.Sprintf("%s=%d.%s", MarkVar, os.Getpid(), tag) }

// markOf reads the MarkVar value from a process's environment ("" when
// it has none, or it cannot be read).
func markOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	prefix := []byte(MarkVar + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):])
		}
	}
	return ""
}

// marked lists the live processes whose mark satisfies keep, of those
// started at or after since (clock ticks since boot; 0: all).
func marked(since uint64, keep func(mark string) bool) ([]procStat, error) {
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []procStat
	for _, p := range procs {
		if p.pid == self || p.state == 'Z' || p.start < since {
			continue
		}
		if m := markOf(p.pid); m != "" && keep(m) {
			out = append(out, p)
		}
	}
	return out, nil
}

// LeftBehind lists the processes working inside dir that an earlier
// driver started (their mark names another driver's pid): its git, gates,
// agents and what they left running. Processes without a mark (a user's
// shell in a worktree) are not listed.
func LeftBehind(dir string) ([]int, error) {
	in, err := WorkingIn(dir)
	if err != nil {
		return nil, err
	}
	ours := strconv.Itoa(os.Getpid()) + "."
	var pids []int
	for _, pid := range in {
		if m := markOf(pid); m != "" && !strings.HasPrefix(m, ours) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Stop stops the processes: SIGTERM, SIGKILL after grace for those left,
// and fails when one still lives reapWait after that.
func Stop(pids []int, grace time.Duration) error {
	var ps []procStat
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.state != 'Z' {
			ps = append(ps, st)
		}
	}
	return stopProcs(ps, grace)
}

func stopProcs(ps []procStat, grace time.Duration) error {
	if len(ps) == 0 {
		return nil
	}
	signalProcs(ps, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); anyAlive(ps) && time.Now().Before(deadline); {
		time.Sleep(pollEvery)
	}
	signalProcs(ps, syscall.SIGKILL)
	for deadline := time.Now().Add(reapWait); anyAlive(ps); time.Sleep(pollEvery) {
		if !time.Now().Before(deadline) {
			return fmt.Errorf("supervisor: %d processes still alive %s after SIGKILL", len(ps), reapWait)
		}
	}
	return nil
}
