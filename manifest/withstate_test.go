package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// WithState's manifest is exactly what parsing its bytes gives, for every
// phase and state, over the corpus: so a writer may keep it instead of
// parsing again.
func TestWithStateEqualsParse(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "manifests", "*.md"))
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, f := range files {
		if filepath.Base(f) == "errors.md" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range m.Phases {
			cur := m
			for _, s := range States {
				next, err := cur.WithState(p.ID, s)
				if err != nil {
					t.Fatalf("%s %s=%s: %v", f, p.ID, s, err)
				}
				want, err := Parse(next.Src)
				if err != nil {
					t.Fatalf("%s %s=%s: reparse: %v", f, p.ID, s, err)
				}
				if !reflect.DeepEqual(next, want) {
					t.Fatalf("%s %s=%s: WithState\n%+v\nParse\n%+v", f, p.ID, s, next, want)
				}
				cur = next
			}
		}
	}
}

func BenchmarkWithState10k(b *testing.B) {
	m, err := Parse(Generate(10000, 3, 1))
	if err != nil {
		b.Fatal(err)
	}
	id := m.Phases[len(m.Phases)/2].ID
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s := Running
		if i%2 == 1 {
			s = Pending
		}
		if m, err = m.WithState(id, s); err != nil {
			b.Fatal(err)
		}
	}
}
