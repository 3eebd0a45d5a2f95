#!/usr/bin/env bash
# sysprof.sh: where a command's CPU goes, its children included (issue 23,
# BENCHMARKS.md §5 session 9): the syscalls and page faults it and its
# children make (perf stat on syscall tracepoints), then its CPU samples
# (perf record -g, cpu-clock) by process (git, the test binary, sh) and by
# cause, read from each sample's stack: process start (execve, the dynamic
# loader), page faults, file creation on ext4, open/stat, fork, futex/sleep.
# Needs perf and root (or perf_event_paranoid <= 1). Usage, from the
# package's folder, with a test binary made by `go test -c -o /tmp/x.test`:
#   bench/sysprof.sh OUT_DIR /tmp/x.test -test.count=1
set -euo pipefail
out=$1
shift
mkdir -p "$out"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
ev=task-clock,page-faults,context-switches
for s in execve clone clone3 vfork wait4 fsync fdatasync openat newfstatat getdents64 mmap munmap mprotect unlinkat mkdir mkdirat rename read write futex nanosleep; do
	ev=$ev,syscalls:sys_enter_$s
done
echo "load before: $(cat /proc/loadavg)" > "$out/counts.txt"
perf stat -e "$ev" -o "$out/counts.txt" --append -- "$@" > "$out/run1.log" 2>&1
echo "load after: $(cat /proc/loadavg)" >> "$out/counts.txt"
perf record -q -e cpu-clock -F 499 -g -o "$out/perf.data" -- "$@" > "$out/run2.log" 2>&1
perf script -i "$out/perf.data" -F comm,ip,sym,dso 2>/dev/null | awk '
function flush() {
	if (comm == "") return
	c = kern ? "kernel, other" : "user code"
	if (stk ~ /__ext4_new_inode/) c = "new inode on ext4 (create, mkdir)"
	else if (stk ~ /do_unlinkat|do_rmdir|ext4_evict_inode/) c = "unlink, rmdir"
	else if (stk ~ /__x64_sys_execve|bprm_execve|load_elf_binary/) c = "execve"
	else if (stk ~ /_dl_|dl_main|_dl_start/) c = "dynamic loader (its faults too)"
	else if (stk ~ /do_exit|exit_mmap/) c = "exit"
	else if (stk ~ /kernel_clone|copy_process|dup_mm/) c = "fork, clone"
	else if (stk ~ /munmap|mprotect|__x64_sys_mmap/) c = "mmap, munmap, mprotect"
	else if (stk ~ /exc_page_fault/) c = "page faults, other"
	else if (stk ~ /fsync|fdatasync/) c = "fsync"
	else if (stk ~ /__x64_sys_openat|path_openat|__x64_sys_newfstatat|getdents|readlink/) c = "open, stat, getdents"
	else if (stk ~ /__x64_sys_read|__x64_sys_write|ksys_read|ksys_write/) c = "read, write"
	else if (stk ~ /__x64_sys_rename|__x64_sys_link|__x64_sys_mkdir/) c = "rename, link, mkdir"
	else if (stk ~ /schedule|futex|nanosleep|epoll|wait4|kernel_waitid/) c = "scheduling, futex, sleep, wait"
	n[comm SUBSEP c]++; tot[comm]++; all++
	comm = ""; stk = ""; kern = 0
}
/^[^ \t]/ { flush(); comm = $1; if (comm ~ /^git/) comm = "git"; else if (comm ~ /\.test$/) comm = "test binary"; else if (comm != "sh" && comm != "bash") comm = "other"; next }
/^[ \t]+[0-9a-f]+ / { stk = stk " " $2; if ($0 ~ /kernel.kallsyms/) kern = 1; next }
END {
	flush()
	for (t in tot) printf "%6.1f%%  %-12s all\n", 100 * tot[t] / all, t
	for (k in n) { split(k, a, SUBSEP); if (100 * n[k] / all >= 0.5) printf "%6.1f%%  %-12s %s\n", 100 * n[k] / all, a[1], a[2] }
}' | sort -rn > "$out/causes.txt"
cat "$out/counts.txt" "$out/causes.txt"
