package pacer

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// readTimeout bounds one usage command or probe: a hung command must not
// hold the pass (the lane then keeps its previous value).
const readTimeout = 30 * time.Second

// ReadUsage runs a lane's USAGE_CMD with sh -c and parses what it prints.
// An empty command, a failure or unparsable output is an unreadable
// reading.
func ReadUsage(ctx context.Context, cmd string, env []string) Usage {
	if strings.TrimSpace(cmd) == "" {
		return Usage{}
	}
	out, err := runShell(ctx, cmd, env)
	if err != nil {
		return Usage{}
	}
	return ParseUsage(string(out))
}

// Probe measures the machine: RESOURCE_PROBE_CMD's `<cores> <load5>
// <mem_available_mb>` when set, else the cores Go sees, /proc/loadavg and
// /proc/meminfo. ok is false when nothing could be read; the caller then
// uses the budget floor.
func Probe(ctx context.Context, cmd string, env []string) (cores, load5, memMB float64, ok bool) {
	if strings.TrimSpace(cmd) != "" {
		out, err := runShell(ctx, cmd, env)
		if err != nil {
			return 0, 0, 0, false
		}
		return ParseProbe(string(out))
	}
	cores = float64(runtime.NumCPU())
	la, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(la))
	if len(f) < 2 {
		return 0, 0, 0, false
	}
	if load5, err = strconv.ParseFloat(f[1], 64); err != nil {
		return 0, 0, 0, false
	}
	mi, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(mi))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		if k != "MemAvailable" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return 0, 0, 0, false
		}
		return cores, load5, kb / 1024, true
	}
	return 0, 0, 0, false
}

func runShell(ctx context.Context, cmd string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Env = env
	c.WaitDelay = time.Second
	return c.Output()
}
