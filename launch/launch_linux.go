package launch

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Hide returns the program's whole environment (env with the secrets read
// back from the pipe) after making sure the process's own environment
// holds none of Names and the process is non-dumpable (see the package
// doc). When env holds a secret and the process was not re-executed yet,
// Hide re-executes it and does not return (unless the exec fails). env is
// os.Environ() at the start of main.
func Hide(env []string) ([]string, error) {
	keep, secrets := split(env)
	var fdv string
	var rest []string
	for _, kv := range keep {
		if v, ok := cutKey(kv, FDEnv); ok {
			fdv = v
			continue
		}
		rest = append(rest, kv)
	}
	switch {
	case fdv != "":
		got, err := readSecrets(fdv)
		if err != nil {
			return nil, err
		}
		// Whatever the environment holds under Names now (set by hand
		// beside the pipe) is not the handed-over value: the pipe wins.
		env = append(rest, got...)
		os.Unsetenv(FDEnv)
	case len(secrets) > 0:
		return nil, reexec(rest, secrets)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("launch: make the process non-dumpable: %w", err)
	}
	return env, nil
}

func cutKey(kv, key string) (string, bool) {
	if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
		return kv[len(key)+1:], true
	}
	return "", false
}

// reexec writes secrets into a pipe, closes its write end and executes
// the program again in place with env (which holds no secret) and the
// pipe's read end named by FDEnv. A pipe keeps what was written to it
// while a reader holds it open, across the exec.
func reexec(env, secrets []string) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("launch: pipe: %w", err)
	}
	data := encode(secrets)
	if len(data) > 60<<10 {
		return fmt.Errorf("launch: secrets too large for the pipe (%d bytes)", len(data))
	}
	if _, err := unix.Write(p[1], data); err != nil {
		return fmt.Errorf("launch: write the pipe: %w", err)
	}
	unix.Close(p[1])
	// The read end survives the exec; nothing else does.
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("launch: pipe: %w", err)
	}
	env = append(env, FDEnv+"="+strconv.Itoa(p[0]))
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	unix.Close(p[0])
	return fmt.Errorf("launch: re-execute without the secrets in the environment: %w", err)
}

// readSecrets reads the handed-over secrets from fd fdv and closes it.
func readSecrets(fdv string) ([]string, error) {
	fd, err := strconv.Atoi(fdv)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("launch: %s=%q is not a pipe's number", FDEnv, fdv)
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "secrets")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("launch: read the secrets from %s: %w", FDEnv, err)
	}
	var out []string
	for _, kv := range decode(b) {
		k, _, _ := strings.Cut(kv, "=")
		if isSecret(k) {
			out = append(out, kv)
		}
	}
	return out, nil
}
