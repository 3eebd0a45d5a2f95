package roadmap_test

// Benchmarks of planning a 10,000-phase roadmap (avg 3 deps): what
// `claudopilot plan` and the start of `claudopilot run` do before any agent
// starts, and what one state change in the live manifest costs. Numbers
// and targets are in BENCHMARKS.md; run with
//
//	go test -run XXX -bench . -benchmem ./manifest ./roadmap

import (
	"fmt"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// plan10k returns the generated 10k manifest and a folder listing with one
// doc per phase (DONE_ for merged ones), as roadmap.Load would pass.
func plan10k(tb testing.TB) ([]byte, []string) {
	tb.Helper()
	src := manifest.Generate(10000, 3, 1)
	m, err := manifest.Parse(src)
	if err != nil {
		tb.Fatal(err)
	}
	files := []string{roadmap.ManifestName}
	for _, p := range m.Phases {
		name := fmt.Sprintf("%s-generated.md", p.ID)
		if p.State == manifest.Merged {
			name = roadmap.DonePrefix + name
		}
		files = append(files, name)
	}
	return src, files
}

// plan does what `claudopilot plan` computes: validate, waves, critical
// path, and the eligible set.
func plan(tb testing.TB, src []byte, files []string) {
	r, err := roadmap.Parse("/rm", src, files, roadmap.Options{RequireDocs: true})
	if err != nil {
		tb.Fatal(err)
	}
	waves := r.Levels(roadmap.FileState)
	path, _, _ := r.CriticalPath(roadmap.FileState)
	eligible := len(scheduler.Eligible(scheduler.FileView(r, state.Rules{}, nil, nil, time.Time{})))
	if len(r.Nodes) != 10000 || len(waves) == 0 || len(path) == 0 || eligible == 0 {
		tb.Fatalf("nodes %d waves %d path %d eligible %d", len(r.Nodes), len(waves), len(path), eligible)
	}
}

// BenchmarkPlan10k: parse + validate + Levels + CriticalPath + Eligible for
// every node. Target: under 300 ms and 100 MB allocated per op.
func BenchmarkPlan10k(b *testing.B) {
	src, files := plan10k(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		plan(b, src, files)
	}
}

// BenchmarkPlan10kSteps splits BenchmarkPlan10k into its steps.
func BenchmarkPlan10kSteps(b *testing.B) {
	src, files := plan10k(b)
	r, err := roadmap.Parse("/rm", src, files, roadmap.Options{RequireDocs: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("manifest.Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := manifest.Parse(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("roadmap.Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := roadmap.Parse("/rm", src, files, roadmap.Options{RequireDocs: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Levels", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Levels(roadmap.FileState)
		}
	})
	b.Run("CriticalPath", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.CriticalPath(roadmap.FileState)
		}
	})
	// The scheduler's rule (Holds) for every node, as plan and status
	// ask it.
	b.Run("Eligible-all", func(b *testing.B) {
		b.ReportAllocs()
		v := scheduler.FileView(r, state.Rules{}, nil, nil, time.Time{})
		for b.Loop() {
			scheduler.Eligible(v)
		}
	})
	// Remaining is what the scheduler ranks ready phases by; it runs on
	// every dispatch that has more ready phases than free slots.
	b.Run("Remaining", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Remaining(roadmap.FileState)
		}
	})
}

// BenchmarkApply10k flips one state in the 10k manifest the way every
// write to the live file does (roadmap.File.SetState: re-read, Apply,
// write): a full parse, then one copy of the file.
func BenchmarkApply10k(b *testing.B) {
	src := manifest.Generate(10000, 3, 1)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := manifest.Apply(src, "phase-05000", manifest.Failed)
		if err != nil || len(out) < len(src)-2 {
			b.Fatal(err)
		}
	}
}
