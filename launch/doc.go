// Package launch keeps the driver's secrets out of what other processes
// can read of it. A process's /proc/<pid>/environ is the environment it
// was started with, whatever it unsets later (os.Unsetenv does not change
// it), and a child of the driver (an agent) can read its parent's environ,
// cmdline and, through /proc/<pid>/mem, its memory whenever the kernel's
// ptrace access check lets it: same uid and a dumpable process.
//
// Hide, called first thing in main, therefore
//
//   - re-executes the program in place (same pid, same arguments) without
//     the secret variables (Names) in its environment, handing their values
//     over a pipe whose number a CLAUDOPILOT_SECRET_FD variable names; the
//     new image reads them back and closes the pipe, so they live in its
//     memory only; and
//   - makes the process non-dumpable (prctl PR_SET_DUMPABLE 0): its
//     environ, cmdline-adjacent files and mem then answer EPERM to every
//     process without CAP_SYS_PTRACE, the same uid included.
//
// Root with CAP_SYS_PTRACE can still read any process's memory: an agent
// that runs as root with its capabilities is not confined by this (run it
// under the sandbox, or as another user).
package launch
