package yamlfile

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzObjects: no input file makes the one decode (Objects), the one
// conversion (Map) or the image walk panic or hang; a refusal is an error
// naming the file. Seeded from testdata/ (committed corpus under
// testdata/fuzz/FuzzObjects replays with go test).
func FuzzObjects(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.*"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("spec:\n  rules:\n  - 1: x\n"))
	f.Add([]byte("a: &a [x]\nb: [*a, *a]\n? {k: v}\n: z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file := File{Name: "fuzz.yaml", Data: data}
		objs, err := file.Objects()
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Objects: %T %v, want a *ParseError", err, err)
			}
			return
		}
		for _, o := range objs {
			o.Map() //nolint:errcheck // only that it returns
			o.TypeMeta()
		}
		Sites("fuzz.yaml", data) //nolint:errcheck
	})
}
