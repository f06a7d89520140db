package pullpath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchEndpoints are the sizes loaded: the hostile input of issue 31
// (20,000 mirror endpoints in one file), and twice that, to show the load
// is linear.
var benchEndpoints = []int{20000, 40000}

// bigK3s is a registries.yaml whose docker.io mirror lists n endpoints.
func bigK3s(n int) []byte {
	var b strings.Builder
	b.WriteString("mirrors:\n  docker.io:\n    endpoint:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - \"https://mirror%d.example.com:5000\"\n", i)
	}
	return []byte(b.String())
}

// bigHostsTOML is a hosts.toml listing n hosts.
func bigHostsTOML(n int) []byte {
	var b strings.Builder
	b.WriteString("server = \"https://registry.example.com\"\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[host.\"https://mirror%d.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n", i)
	}
	return []byte(b.String())
}

// BenchmarkLoad loads each format with 20,000 and 40,000 endpoints and
// prints the time per load.
func BenchmarkLoad(b *testing.B) {
	type input struct {
		name, file string
		n          int
		data       []byte
	}
	var inputs []input
	for _, n := range benchEndpoints {
		inputs = append(inputs,
			input{"k3s registries.yaml", "registries.yaml", n, bigK3s(n)},
			input{"hosts.toml", "registry.example.com/hosts.toml", n, bigHostsTOML(n)})
	}
	for _, tc := range inputs {
		b.Run(fmt.Sprintf("%s/%d", tc.name, tc.n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for b.Loop() {
				if _, err := Load(path); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			fmt.Printf("%s: %d endpoints, %d bytes: %s per load\n", tc.name, tc.n, len(tc.data), per)
		})
	}
}
