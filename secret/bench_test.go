package secret

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sourceLines are this repository's Go files, as lines: ordinary code
// with a few test secrets in it.
func sourceLines(b *testing.B) []string {
	b.Helper()
	files, _ := filepath.Glob("../*/*.go")
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, strings.Split(string(data), "\n")...)
	}
	return lines
}

// BenchmarkRules is the rules' cost per line of code.
func BenchmarkRules(b *testing.B) {
	lines := sourceLines(b)
	b.ResetTimer()
	for b.Loop() {
		runHits(lines)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// BenchmarkRedact is the funnel's cost per line of a log.
func BenchmarkRedact(b *testing.B) {
	lines := sourceLines(b)
	r := NewRedactor([]string{"GITHUB_TOKEN=" + testToken, "DEPLOY_PASSWORD=pa55 w/rd+Zq8&x=1"})
	b.ResetTimer()
	for b.Loop() {
		r.Lines(lines)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// BenchmarkLanding is one landing's scan (git's processes included): a
// branch of five commits and a merge of the base adding 50 files, 2,000
// lines of code.
func BenchmarkLanding(b *testing.B) {
	t := &testing.T{}
	g, commit := newRepo(t)
	lines := sourceLines(b)
	ctx := context.Background()
	base := commit("base", map[string]string{"README.md": "hi\n"})
	g.Git(ctx, "checkout", "-q", "-b", "br")
	for c := range 5 {
		files := map[string]string{}
		for f := range 10 {
			at := (c*10 + f) * 40
			files[fmt.Sprintf("pkg%d/f%d.go", c, f)] = strings.Join(lines[at:at+40], "\n") + "\n"
		}
		commit(fmt.Sprintf("commit %d", c), files)
		if c == 2 {
			g.Git(ctx, "checkout", "-q", "main")
			commit("base moves", map[string]string{"base.txt": "moved\n"})
			g.Git(ctx, "checkout", "-q", "br")
			g.Git(ctx, "merge", "-q", "--no-edit", "main")
		}
	}
	tip, _ := g.Git(ctx, "rev-parse", "HEAD")
	s := &Scanner{Known: NewRedactor([]string{"GITHUB_TOKEN=" + testToken})}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Landing(ctx, g, base, tip); err != nil {
			b.Fatal(err)
		}
	}
}
