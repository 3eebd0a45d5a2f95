package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// BenchmarkFileSetState10k is one state write to a live 10,000-phase
// manifest on disk, as the scheduler does for every launch and the merge
// owner for every merge: re-read, manifest.Apply (a full parse, then one
// copy), write a temp file, fsync, re-read to check for a concurrent save,
// rename, fsync the folder.
//
//	go test -run XXX -bench FileSetState -benchmem ./bench
func BenchmarkFileSetState10k(b *testing.B) {
	path := filepath.Join(b.TempDir(), roadmap.ManifestName)
	src := manifest.Generate(10000, 3, 1)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		b.Fatal(err)
	}
	f := roadmap.NewFile(path)
	states := []manifest.State{manifest.Failed, manifest.Pending}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.SetState("phase-05000", states[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
