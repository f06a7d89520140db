package pin

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/yamlfile"
)

// Lookup returns the digest to pin img to ("sha256:…"), or ok=false to
// leave img as it is. Rewrite calls it once per reference it would pin,
// in file order: callers cache.
type Lookup func(img yamlfile.Image) (digest string, ok bool, err error)

const skippedAlias = "reached through a YAML alias"

// errInternal marks a rewrite that failed its own check; the file must be
// left as it is (and the bug reported).
var errInternal = errors.New("internal error, file left as is")

// Rewrite returns data with every unpinned image reference pinned to the
// digest lookup gives, and the changes made. Only the bytes of each
// reference (and of imagePullPolicy values, see WithPullPolicy) change; a
// kustomization images entry gets its digest: value replaced or a digest:
// line added after newTag. Everything else is kept byte for byte.
//
// A reference keeps its spelling and tag: "nginx:1.25" becomes
// "nginx:1.25@sha256:…". A reference with neither tag nor digest gets the
// tag it was resolved with made explicit: "nginx" becomes
// "nginx:latest@sha256:…", so the pin stays readable and tools that update
// tags can follow it. A kustomization entry only gains a digest: (its
// newTag stays as written, none is added). Invalid references and
// non-string values (image: 0) are left alone (see Check).
//
// On error (the file does not parse, is a Helm template, or a lookup
// fails) Rewrite returns nil and no changes: the file must be left as it
// is. Errors name the file and, where known, the line.
func Rewrite(name string, data []byte, lookup Lookup, opts ...Option) ([]byte, []pinresult.Change, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, nil, err
	}
	out, changes, _, err := rewrite(name, data, lookup, o)
	return out, changes, err
}

// rewrite is Rewrite, also returning the edits for tests.
func rewrite(name string, data []byte, lookup Lookup, o options) ([]byte, []pinresult.Change, []edit, error) {
	sites, err := yamlfile.Sites(name, data)
	if err != nil {
		return nil, nil, nil, err
	}
	rw := &rewriting{name: name, t: newText(data), o: o, want: make([]yamlfile.Image, len(sites))}
	var errs []error
	for i, s := range sites {
		rw.want[i] = s.Image
		if !wants(s.Ref, o.update) || s.Entry == nil && s.Part == "" && s.Value.Tag != "!!str" {
			continue // invalid, or not a string (image: 0): left for Check to report
		}
		d, ok, err := lookup(s.Image)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s:%d: looking up %s: %w", name, s.Line, s.Ref, err))
		case !ok:
		default:
			if _, err := digest.Parse(d); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: lookup of %s gave digest %q: %w", name, s.Line, s.Ref, d, err))
				continue
			}
			rw.pin(&rw.want[i], s, d)
		}
	}
	if len(errs) > 0 {
		return nil, nil, nil, errors.Join(errs...)
	}
	if len(rw.edits) == 0 {
		return data, rw.changes, nil, nil
	}
	slices.SortFunc(rw.edits, func(a, b edit) int { return cmp.Compare(a.start, b.start) })
	out, err := apply(data, rw.edits)
	if err == nil {
		err = selfCheck(name, out, rw.want)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w: %w", name, errInternal, err)
	}
	return out, rw.changes, rw.edits, nil
}

// rewriting is one file's rewrite under way.
type rewriting struct {
	name    string
	t       *text
	o       options
	edits   []edit
	changes []pinresult.Change
	want    []yamlfile.Image // each site as it must read after the edits
}

// pin pins site s to digest d, and sets its pull policy (WithPullPolicy);
// want is what s must read afterwards.
func (rw *rewriting) pin(want *yamlfile.Image, s yamlfile.Site, d string) {
	c := pinresult.Change{
		File: rw.name, Line: s.Line, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name,
		Container: s.Container, Field: "image", Old: s.Ref,
	}
	if s.Field == yamlfile.FieldImageVolumes {
		c.Container, c.Volume = "", s.Container
	}
	var e []edit
	var err error
	if s.Entry != nil {
		c.New, e, err = kustomizeEdit(rw.t, s, d, rw.o.entryTags[[2]int{s.Line, s.Column}])
	} else {
		c.New = withDigest(s.Ref, d)
		e, err = valueEdit(rw.t, s.Value, s.Written(c.New))
	}
	if c.New == c.Old {
		return
	}
	if s.Alias {
		c.Skipped = skippedAlias
	} else if s.Fixed != "" {
		c.Skipped = s.Fixed
	} else if err != nil {
		c.Skipped = err.Error()
	}
	rw.changes = append(rw.changes, c)
	if c.Skipped != "" {
		return
	}
	rw.edits = append(rw.edits, e...)
	want.Ref = c.New
	if rw.o.pullPolicy != "" && s.Image.PullPolicy == "Always" {
		rw.pullPolicy(want, s, c)
	}
}

// pullPolicy rewrites the "imagePullPolicy: Always" of the container (the
// "pullPolicy: Always" of the image volume) whose image change c made.
func (rw *rewriting) pullPolicy(want *yamlfile.Image, s yamlfile.Site, c pinresult.Change) {
	c.Field, c.Old, c.New = "imagePullPolicy", "Always", rw.o.pullPolicy
	if s.Field == yamlfile.FieldImageVolumes {
		c.Field = "pullPolicy"
	}
	if s.PullPolicy == nil {
		c.Skipped = skippedAlias
	} else {
		c.Line = s.PullPolicy.Line
		e, err := valueEdit(rw.t, s.PullPolicy, rw.o.pullPolicy)
		if err != nil {
			c.Skipped = err.Error()
		}
		rw.edits = append(rw.edits, e...)
		if err == nil {
			want.PullPolicy = rw.o.pullPolicy
		}
	}
	rw.changes = append(rw.changes, c)
}

// wants reports whether ref should be looked up: a valid reference that is
// not pinned yet, or is pinned and update is set.
func wants(ref string, update bool) bool {
	r, err := parse(ref)
	return err == nil && (!r.Pinned() || update)
}

// parse is imageref.Parse for a reference as written in a manifest. Space
// around it, which imageref ignores, makes it invalid here: a quoted
// " nginx" is no image Kubernetes accepts, and pin must neither edit it
// nor count it pinned.
func parse(ref string) (imageref.Ref, error) {
	if strings.TrimSpace(ref) != ref {
		return imageref.Ref{}, fmt.Errorf("invalid image reference %q: %w", ref, reference.ErrReferenceInvalidFormat)
	}
	return imageref.Parse(ref)
}

// withDigest returns ref, as written, pinned to d.
func withDigest(ref, d string) string {
	name, _, hadDigest := strings.Cut(ref, "@")
	if !hadDigest && !hasTag(name) {
		name += ":latest"
	}
	return name + "@" + d
}

func hasTag(name string) bool {
	return strings.LastIndexByte(name, ':') > strings.LastIndexByte(name, '/')
}

// valueEdit replaces the value of scalar n with s, keeping its quotes.
func valueEdit(t *text, n *yaml.Node, s string) ([]edit, error) {
	sp, err := t.scalar(n)
	if err != nil {
		return nil, err
	}
	return []edit{{sp.start, sp.end, s}}, nil
}

// kustomizeEdit sets the digest of a kustomization images entry: it
// replaces the digest: value, or adds a digest: key after newTag (else
// after newName or name) in the entry's style and indentation. With tag,
// an entry without newTag: gains one too, before the digest: (an entry
// that renames an image keeps the tag it inherits once it has a digest).
func kustomizeEdit(t *text, s yamlfile.Site, d, tag string) (string, []edit, error) {
	ref, _, _ := strings.Cut(s.Ref, "@")
	keys := []string{"digest: " + d}
	if tag != "" && !hasKey(s.Entry, "newTag") && !hasKey(s.Entry, "digest") {
		ref += ":" + tag
		keys = []string{"newTag: " + plainOrQuoted(tag), keys[0]}
	}
	newRef := ref + "@" + d
	// Place the new key after newTag, else after name or newName,
	// whichever comes last.
	var after, afterKey *yaml.Node // afterKey: the key of after
	for i := 0; i+1 < len(s.Entry.Content); i += 2 {
		k, v := s.Entry.Content[i], s.Entry.Content[i+1]
		switch {
		case k.Value == "digest":
			e, err := valueEdit(t, v, d)
			return newRef, e, err
		case k.Value == "newTag",
			(k.Value == "name" || k.Value == "newName") && (afterKey == nil || afterKey.Value != "newTag"):
			after, afterKey = v, k
		}
	}
	if after == nil {
		return newRef, nil, errStyle
	}
	sp, err := t.scalar(after)
	if err != nil {
		return newRef, nil, err
	}
	if s.Entry.Style&yaml.FlowStyle != 0 {
		return newRef, []edit{{sp.end + closeQuote(t, after), sp.end + closeQuote(t, after), ", " + strings.Join(keys, ", ")}}, nil
	}
	end, br := t.lineEnd(sp.end)
	indent := strings.Repeat(" ", s.Entry.Column-1) // where the entry's keys start
	return newRef, []edit{{end, end, br + indent + strings.Join(keys, br+indent)}}, nil
}

// hasKey reports whether mapping m has key.
func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// plainOrQuoted writes s as a YAML string: plain when it reads back as
// that string, double-quoted otherwise (a tag such as 1.25 would read as
// a number).
func plainOrQuoted(s string) string {
	var m map[string]any
	if yaml.Unmarshal([]byte("v: "+s), &m) == nil && m["v"] == s {
		return s
	}
	return strconv.Quote(s)
}

// closeQuote is 1 when n is quoted: its closing quote follows its value.
func closeQuote(t *text, n *yaml.Node) int {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return 1
	}
	return 0
}

// selfCheck parses the result again and makes sure it holds exactly the
// images expected, in the same places.
func selfCheck(name string, out []byte, want []yamlfile.Image) error {
	got, err := yamlfile.Parse(name, out)
	if err != nil {
		return fmt.Errorf("result does not parse: %w", err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("result has %d images, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		g.Line, g.Column, w.Line, w.Column = 0, 0, 0, 0 // an added digest: line moves what follows
		if g != w {
			return fmt.Errorf("found %+v, want %+v", g, w)
		}
	}
	return nil
}

// slot names what of its workload img is, for messages: "container web",
// "volume models" (an image volume).
func slot(img yamlfile.Image) string {
	if img.Field == yamlfile.FieldImageVolumes {
		return "volume " + img.Container
	}
	return "container " + img.Container
}

// Check returns the images that are not pinned to a digest (including
// invalid references, which cannot be), for a --check mode that fails
// when a manifest would change.
func Check(images []yamlfile.Image) []yamlfile.Image {
	var out []yamlfile.Image
	for _, img := range images {
		if !pinresult.Pinned(img.Ref) {
			out = append(out, img)
		}
	}
	return out
}
