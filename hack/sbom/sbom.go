// Package sbom writes a small SPDX 2.3 JSON document for a Go binary from
// the build information the Go linker records in it (what `go version -m`
// prints): the main module and every module it was built from, each with
// its version and package URL (pkg:golang/…). hack/image attaches it to
// the image as an OCI referrer; hack/dist writes one beside each binary.
package sbom

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// MediaType is the SPDX JSON media type: the referrer's artifactType and
// its layer's.
const MediaType = "application/spdx+json"

// Document is the part of an SPDX 2.3 document this package writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says when and by what the document was made.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

// Package is one Go module.
type Package struct {
	Name             string        `json:"name"`
	SPDXID           string        `json:"SPDXID"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	PrimaryPurpose   string        `json:"primaryPackagePurpose,omitempty"`
	ExternalRefs     []ExternalRef `json:"externalRefs,omitempty"`
}

// ExternalRef is a package's purl.
type ExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

// Relationship links two elements: the document DESCRIBES the main
// module, which DEPENDS_ON each other module.
type Relationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// Options name the document and its main module's version.
type Options struct {
	// Name is the document's name, such as regcheck-v1.2.3-linux-amd64.
	Name string
	// Version is the main module's version when the build recorded none
	// (a build of a checkout records "(devel)"): the stamped one.
	Version string
	// Created is the document's time (the image's: reproducible).
	Created time.Time
}

// FromBinary reads bin's build information and returns its SPDX JSON.
func FromBinary(bin []byte, o Options) ([]byte, error) {
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return nil, fmt.Errorf("reading the binary's build information: %w", err)
	}
	sum := sha256.Sum256(bin)
	doc := FromBuildInfo(bi, o, hex.EncodeToString(sum[:]))
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// FromBuildInfo makes the document for bi; binSum (the binary's sha256,
// hex) makes its namespace unique to the binary.
func FromBuildInfo(bi *debug.BuildInfo, o Options, binSum string) Document {
	mainVersion := bi.Main.Version
	if mainVersion == "" || mainVersion == "(devel)" {
		mainVersion = o.Version
	}
	doc := Document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              o.Name,
		DocumentNamespace: "https://github.com/regcheck/regcheck/spdx/" + o.Name + "-" + binSum,
		CreationInfo: CreationInfo{
			Created:  o.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: regcheck-hack-sbom"},
			Comment:  "From the Go build information of the binary (sha256 " + binSum + "), built with " + bi.GoVersion + ".",
		},
	}
	main := module(bi.Main.Path, mainVersion, "SPDXRef-Package-main")
	main.PrimaryPurpose = "APPLICATION"
	doc.Packages = append(doc.Packages, main)
	doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID})
	for i, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		p := module(d.Path, d.Version, fmt.Sprintf("SPDXRef-Package-%d", i+1))
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, Relationship{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return doc
}

// module is a Go module's package, with its purl when it has a version.
func module(path, version, id string) Package {
	p := Package{Name: path, SPDXID: id, VersionInfo: version, DownloadLocation: "NOASSERTION"}
	if version != "" {
		p.ExternalRefs = []ExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: Purl(path, version)}}
	}
	return p
}

// Purl is a Go module's package URL: pkg:golang/PATH@VERSION, the
// version's + percent-encoded (v3.5.1+incompatible).
func Purl(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}
