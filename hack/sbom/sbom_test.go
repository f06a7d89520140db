package sbom

import (
	"encoding/json"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/regcheck/regcheck", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
			{Path: "github.com/blang/semver", Version: "v3.5.1+incompatible"},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1"}},
		},
	}
	doc := FromBuildInfo(bi, Options{Name: "regcheck-v1.2.3-linux-amd64", Version: "v1.2.3", Created: time.Unix(0, 0)}, "ab12")
	want := []struct{ name, version, purl string }{
		{"github.com/regcheck/regcheck", "v1.2.3", "pkg:golang/github.com/regcheck/regcheck@v1.2.3"},
		{"github.com/spf13/cobra", "v1.10.2", "pkg:golang/github.com/spf13/cobra@v1.10.2"},
		{"github.com/blang/semver", "v3.5.1+incompatible", "pkg:golang/github.com/blang/semver@v3.5.1%2Bincompatible"},
		{"example.com/fork", "v1.0.1", "pkg:golang/example.com/fork@v1.0.1"},
	}
	if len(doc.Packages) != len(want) {
		t.Fatalf("%d packages, want %d: %+v", len(doc.Packages), len(want), doc.Packages)
	}
	for i, w := range want {
		p := doc.Packages[i]
		if p.Name != w.name || p.VersionInfo != w.version || len(p.ExternalRefs) != 1 || p.ExternalRefs[0].Locator != w.purl {
			t.Errorf("package %d: %+v, want %+v", i, p, w)
		}
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "1970-01-01T00:00:00Z" || !strings.HasSuffix(doc.DocumentNamespace, "-ab12") {
		t.Errorf("document %+v", doc)
	}
	// One DESCRIBES of the main module, one DEPENDS_ON per dependency.
	if len(doc.Relationships) != 4 || doc.Relationships[0] != (Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Package-main"}) ||
		doc.Relationships[3] != (Relationship{"SPDXRef-Package-main", "DEPENDS_ON", "SPDXRef-Package-3"}) {
		t.Errorf("relationships %+v", doc.Relationships)
	}
}

// TestFromBinary reads this test's own binary, a Go binary with build
// information, and refuses bytes that are none.
func TestFromBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FromBinary(bin, Options{Name: "test", Version: "v0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Packages) == 0 || doc.Packages[0].Name != "github.com/regcheck/regcheck/hack/sbom.test" && doc.Packages[0].Name != "github.com/regcheck/regcheck" {
		t.Errorf("main package %+v", doc.Packages)
	}
	if _, err := FromBinary([]byte("#!/bin/sh\necho not go\n"), Options{}); err == nil {
		t.Error("a shell script: no error")
	}
}
