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
// owner for every merge: re-read, flip the token in the cached parse of the
// bytes last written (Manifest.WithState: one copy), write a temp file,
// fsync, re-read to check for a concurrent save, swap it in
// (renameat2 RENAME_EXCHANGE), read the swapped-out file to check it again,
// fsync the folder. The first write of a File parses the manifest (~70 ms,
// 38 MB); it is made before the timer starts, so the figure is the steady
// state and does not depend on how many iterations the run picks (it did:
// 4,000 to 33,000 allocs/op between runs of the same code).
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
	if err := f.SetState("phase-05000", manifest.Pending); err != nil {
		b.Fatal(err)
	}
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
