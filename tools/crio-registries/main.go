// Command crio-registries prints, as JSON, where containers/image's
// sysregistriesv2 (the library CRI-O reads registries.conf with) sends a
// pull of each reference given: the registry FindRegistry matches, and
// the sources PullSourcesFromReference lists in order, each with the
// reference rewritten for it, its insecure flag, its pull-from-mirror and
// whether the registry its rewritten name matches is blocked (what the
// docker transport checks before a request to it). regcheck's
// differential test (pullpath) compares its own registries.conf reading
// with this.
//
// usage: crio-registries [-conf registries.conf] [-dir registries.conf.d] REFERENCE...
//
// Without -conf the main file is an empty one (a drop-in folder alone);
// without -dir no drop-in folder is read. No other file is read: neither
// /etc/containers nor $HOME.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// Result is what the library says of one reference.
type Result struct {
	Ref string `json:"ref"`
	// Registry is FindRegistry's match, nil when none matches (the
	// reference's own registry is then the one source).
	Registry *Registry `json:"registry"`
	Sources  []Source  `json:"sources"`
	Error    string    `json:"error,omitempty"`
}

// Registry is the [[registry]] FindRegistry matched.
type Registry struct {
	Prefix   string `json:"prefix"`
	Location string `json:"location"`
	Blocked  bool   `json:"blocked"`
	Insecure bool   `json:"insecure"`
}

// Source is one PullSource, in order.
type Source struct {
	// Reference is the rewritten reference; Name its name alone
	// (host/repository).
	Reference      string `json:"reference"`
	Name           string `json:"name"`
	Insecure       bool   `json:"insecure"`
	PullFromMirror string `json:"pullFromMirror,omitempty"`
	// Blocked is FindRegistry(Name).Blocked: the docker transport refuses
	// the source without a request.
	Blocked bool `json:"blocked"`
	// Mirror is false for the last source, the registry's own location.
	Mirror bool `json:"mirror"`
}

func main() {
	conf := flag.String("conf", "", "the main registries.conf (default: an empty one)")
	dir := flag.String("dir", "", "the registries.conf.d drop-in folder (default: none)")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "crio-registries")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crio-registries:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(tmp)
	sys, err := systemContext(tmp, *conf, *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crio-registries:", err)
		os.RemoveAll(tmp)
		os.Exit(2)
	}
	out := make([]Result, 0, flag.NArg())
	for _, ref := range flag.Args() {
		out = append(out, resolve(sys, ref))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "crio-registries:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
}

// systemContext reads conf and dir only: an empty main file stands in for
// a missing conf, and a folder that does not exist for a missing dir,
// both in tmp.
func systemContext(tmp, conf, dir string) (*types.SystemContext, error) {
	if conf == "" {
		conf = filepath.Join(tmp, "registries.conf")
		if err := os.WriteFile(conf, nil, 0o600); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		dir = filepath.Join(tmp, "none.d")
	}
	return &types.SystemContext{SystemRegistriesConfPath: conf, SystemRegistriesConfDirPath: dir}, nil
}

// resolve is what the docker transport's newImageSource does with ref
// before its first request.
func resolve(sys *types.SystemContext, ref string) Result {
	r := Result{Ref: ref, Sources: []Source{}}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	named = reference.TagNameOnly(named)
	reg, err := sysregistriesv2.FindRegistry(sys, named.Name())
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if reg != nil {
		r.Registry = &Registry{Prefix: reg.Prefix, Location: reg.Location, Blocked: reg.Blocked, Insecure: reg.Insecure}
	} else {
		reg = &sysregistriesv2.Registry{Endpoint: sysregistriesv2.Endpoint{Location: named.String()}, Prefix: named.String()}
	}
	sources, err := reg.PullSourcesFromReference(named)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	for i, ps := range sources {
		s := Source{Reference: ps.Reference.String(), Name: ps.Reference.Name(), Insecure: ps.Endpoint.Insecure,
			PullFromMirror: ps.Endpoint.PullFromMirror, Mirror: i < len(sources)-1}
		if b, err := sysregistriesv2.FindRegistry(sys, ps.Reference.Name()); err != nil {
			r.Error = err.Error()
		} else if b != nil {
			s.Blocked = b.Blocked
		}
		r.Sources = append(r.Sources, s)
	}
	return r
}
