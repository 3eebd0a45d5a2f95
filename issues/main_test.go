package issues

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// TestMain runs 8 parallel tests at a time (at least four times
// GOMAXPROCS) unless -test.parallel is given: the scenario tests spend
// most of their time waiting on the fake GitHub's timeouts and on git,
// so two at a time (the default on 2 cores) leaves the CPU idle. On an
// otherwise idle 2-core machine the package took 22.5 s with 2, 15.8 s
// with 4, 12.1 s with 8 (BENCHMARKS.md, section 5).
//
// Its temporary folders (the fixture, every test's origin, clones and
// worktrees) are on /dev/shm when TMPDIR is not set (gittest.MemTempDir):
// no agent here runs sandboxed, and no test is about what a disk keeps.
func TestMain(m *testing.M) {
	mem := gittest.MemTempDir("issues-")
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(8, 4*runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	removeFixture()
	mem()
	os.Exit(code)
}
