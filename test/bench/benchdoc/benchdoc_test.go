package benchdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	os.WriteFile(path, []byte("# Benchmarks\n\n<!-- other:begin -->\nkeep\n<!-- other:end -->\n"), 0o644)
	for _, section := range []string{"first\n", "second\n"} {
		if err := WriteSection(path, "mine", section); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	want := "# Benchmarks\n\n<!-- other:begin -->\nkeep\n<!-- other:end -->\n\n<!-- mine:begin -->\nsecond\n<!-- mine:end -->\n"
	if string(b) != want {
		t.Fatalf("got %q", b)
	}
	if m := Machine(); !strings.Contains(m, "cores") {
		t.Fatalf("machine %q", m)
	}
}
