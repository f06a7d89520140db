package pullpath

import (
	"fmt"
	"maps"
	"slices"
)

// MaxMirrors is how many mirrors of one registry host regcheck asks, in
// the order the runtime asks them. The runtimes set no limit: containerd
// (and k3s's containerd) try every [host."..."] of a hosts.toml, CRI-O
// every [[registry.mirror]], each in turn until one answers. Real
// configurations list one to a few; a node that reaches the 17th has
// already waited on 16 mirrors, each unreachable one costing it a dial
// timeout and regcheck about a second. The mirrors past the cap are not
// asked (the registry itself still is, where the runtime falls back to
// it), and the configuration gets an input notice (Config.Notices)
// naming the file and the line of the first one left out; in a hosts.toml
// the file is not decoded past that line.
const MaxMirrors = 16

// Notice is a caveat about a configuration that did not stop it loading:
// a part of it regcheck does not check.
type Notice struct {
	// Path is the configuration file.
	Path string
	// Line is where the part left out starts; 0 when unknown.
	Line int
	// Message says what was left out and why.
	Message string
}

// capped records the mirrors of one host left out by MaxMirrors.
type capped struct {
	dropped int // mirrors not asked
	line    int // of the first one not asked
}

func (c capped) notice(path, host string) (Notice, bool) {
	if c.dropped == 0 {
		return Notice{}, false
	}
	return Notice{Path: path, Line: c.line, Message: fmt.Sprintf(
		"%s lists %d mirrors, more than the %d regcheck asks (pullpath.MaxMirrors): the last %d are not checked",
		host, MaxMirrors+c.dropped, MaxMirrors, c.dropped)}, true
}

// Notices lists what regcheck does not check of the configuration: the
// drop-ins skipped (not a regular file, or larger than
// inputfile.MaxConfig), then one per registry host or [[registry]] past
// MaxMirrors, in file and host order.
func (c *Config) Notices() []Notice {
	out := slices.Clone(c.skipped)
	if c.hosts != nil {
		for _, name := range slices.Sorted(maps.Keys(c.hosts.dirs)) {
			f := c.hosts.dirs[name]
			if n, ok := f.capped.notice(f.path, name); ok {
				out = append(out, n)
			}
		}
	}
	if c.regs != nil {
		for _, r := range c.regs.registries {
			file := r.file
			if file == "" {
				file = c.regs.path
			}
			if n, ok := r.capped.notice(file, "[[registry]] "+r.Prefix); ok {
				out = append(out, n)
			}
		}
	}
	return out
}
