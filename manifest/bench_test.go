package manifest

import "testing"

func BenchmarkParse10k(b *testing.B) {
	src := Generate(10000, 3, 1)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := Parse(src)
		if err != nil || len(m.Phases) != 10000 {
			b.Fatalf("phases %d err %v", len(m.Phases), err)
		}
	}
}

func BenchmarkSetState10k(b *testing.B) {
	src := Generate(10000, 3, 1)
	m, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	id := m.Phases[len(m.Phases)/2].ID
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.SetState(id, Failed); err != nil {
			b.Fatal(err)
		}
	}
}
