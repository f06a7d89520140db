package pin

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/yamlfile"
)

// render reads each root as it is deployed (see render.Find).
func (c Config) render(roots []string) []*render.Tree {
	trees := make([]*render.Tree, len(roots))
	for i, root := range roots {
		trees[i] = render.Find(root, c.renderOptions()...)
	}
	return trees
}

func (c Config) renderOptions() []render.Option {
	opts := []render.Option{render.WithValues(c.HelmValues...), render.WithExclude(c.excluded)}
	if c.Fetch != nil {
		opts = append(opts, render.WithFetch(*c.Fetch))
	}
	if c.FetchRemote {
		opts = append(opts, render.WithRemote())
	}
	return opts
}

// renderedUse is an image of a rendered object, and what rendered it.
type renderedUse struct {
	render.Use
	tree *render.Tree
	app  *render.App
}

// uses lists the wanted images of every app of trees: its kustomizations
// and charts, and the charts its GitOps objects deploy, rendered with
// their values.
func (c Config) uses(trees []*render.Tree) []renderedUse {
	var out []renderedUse
	for _, t := range trees {
		for _, a := range slices.Concat(t.Apps, t.GitOps) {
			for _, u := range a.Uses {
				if c.wanted(u.Image) {
					out = append(out, renderedUse{Use: u, tree: t, app: a})
				}
			}
		}
	}
	return out
}

// what says which object uses u and what rendered it, for messages.
func (u renderedUse) what() string {
	return fmt.Sprintf("%s %s %s, rendered by %s from %s", u.Kind, strings.TrimPrefix(u.Namespace+"/"+u.Name, "/"), slot(u.Image), u.app.Kind, u.app.Dir)
}

// checkRendered reports every rendered reference that is not pinned
// (KindUnpinned, with why pin cannot pin it where that is so) or cannot
// be (KindInvalid), at the place that sets it.
func (c Config) checkRendered(uses []renderedUse) []pinresult.Finding {
	var out []pinresult.Finding
	seen := map[yamlfile.Image]bool{}
	for _, u := range uses {
		if seen[u.Image] {
			continue
		}
		seen[u.Image] = true
		ref, err := parse(u.Ref)
		f := pinresult.Finding{Kind: pinresult.KindUnpinned, File: u.File, Line: u.Line, Ref: u.Ref,
			Message: fmt.Sprintf("%s is not pinned to a digest (%s)", u.Ref, u.what())}
		switch {
		case err != nil:
			f.Kind, f.Message = pinresult.KindInvalid, fmt.Sprintf("%q is not a valid image reference: %v (%s)", u.Ref, errors.Unwrap(err), u.what())
		case ref.Pinned():
			continue
		case u.Origin.Edit == nil:
			f.Message += "; pin cannot pin it here: " + u.Origin.Why
		}
		out = append(out, f)
	}
	return out
}

// addUses plans the rendered images.
func (p *planner) addUses(uses []renderedUse) {
	for _, u := range uses {
		p.add(u.Image)
	}
}

// place is one place pin edits, and the uses pinned there.
type place struct {
	edit   render.Edit
	uses   []renderedUse
	digest string
}

// pinRendered pins the rendered images where they are set, after
// rendering every app again with the edits; the findings of their plans
// and the changes go into r.
func (c Config) pinRendered(r *pinresult.Report, trees []*render.Tree, uses []renderedUse, p *planner) {
	seen := map[yamlfile.Image]bool{}
	for _, u := range uses {
		if !seen[u.Image] {
			seen[u.Image] = true
			r.Findings = append(r.Findings, p.findings([]yamlfile.Image{u.Image})...)
		}
	}
	targets := c.targets(r, uses, p)
	for len(targets) > 0 {
		files, failed := c.editFiles(r, targets)
		if failed != nil {
			targets = slices.DeleteFunc(targets, func(t *place) bool { return t == failed })
			continue
		}
		drop := c.renderAgain(r, trees, targets, files)
		if len(drop) == 0 {
			c.writeRendered(r, targets, files)
			return
		}
		targets = slices.DeleteFunc(targets, func(t *place) bool { return slices.Contains(drop, t) })
	}
}

// targets groups the uses to pin by the place each is set. A use pin
// must not edit, and a place that sets images pinned to different
// digests, are findings.
func (c Config) targets(r *pinresult.Report, uses []renderedUse, p *planner) []*place {
	byPlace := map[render.Edit]*place{}
	var order []*place
	for _, u := range uses {
		d, ok, _ := p.lookup(u.Image)
		if !ok {
			continue
		}
		if u.Origin.Edit == nil {
			r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: u.File, Line: u.Line, Ref: u.Ref, Digest: d,
				Message: fmt.Sprintf("%s not pinned (%s): %s", u.Ref, u.what(), u.Origin.Why)})
			continue
		}
		e := *u.Origin.Edit
		e.File = filepath.Clean(e.File)
		if !c.inTree(u.tree, e.File) {
			r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: e.File, Line: e.Line, Ref: u.Ref, Digest: d,
				Message: fmt.Sprintf("%s not pinned (%s): it is set in %s, outside %s, where kustomizations or charts pin does not see may use it: pin a folder that holds them all",
					u.Ref, u.what(), e.File, u.tree.Root)})
			continue
		}
		t := byPlace[e]
		if t == nil {
			t = &place{edit: e, digest: d}
			byPlace[e] = t
			order = append(order, t)
		}
		t.uses = append(t.uses, u)
		if d != t.digest {
			t.digest = ""
		}
	}
	return slices.DeleteFunc(order, func(t *place) bool {
		if t.digest != "" {
			return false
		}
		var parts []string
		for _, u := range t.uses {
			d, _, _ := p.lookup(u.Image)
			parts = append(parts, fmt.Sprintf("%s (%s) to %s", u.Ref, u.what(), d))
		}
		for _, u := range t.uses {
			r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: u.File, Line: u.Line, Ref: u.Ref,
				Message: fmt.Sprintf("%s not pinned: this one place sets images that pin to different digests: %s", u.Ref, strings.Join(parts, "; "))})
		}
		return true
	})
}

// inTree reports whether file is under t's root (a root that is a file
// stands for its folder), or is a values file the Config names.
func (c Config) inTree(t *render.Tree, file string) bool {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false
	}
	for _, v := range c.HelmValues {
		if a, err := filepath.Abs(v.File); err == nil && a == abs {
			return true
		}
	}
	root, err := filepath.Abs(t.Root)
	if err != nil {
		return false
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		root = filepath.Dir(root)
	}
	rel, err := filepath.Rel(root, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// editFiles computes every file's new bytes for targets. A place whose
// edit fails its file's check is returned, to be dropped.
func (c Config) editFiles(r *pinresult.Report, targets []*place) (map[string]editedFile, *place) {
	byFile := map[string][]*place{}
	var files []string
	for _, t := range targets {
		if byFile[t.edit.File] == nil {
			files = append(files, t.edit.File)
		}
		byFile[t.edit.File] = append(byFile[t.edit.File], t)
	}
	out := map[string]editedFile{}
	for _, file := range files {
		ts := byFile[file]
		data, err := ts[0].uses[0].tree.Source(file)
		if err != nil {
			r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindUnwritable, File: file, Message: err.Error()})
			return nil, ts[0]
		}
		ef := editedFile{root: ts[0].uses[0].tree.Root, old: data}
		var failed *place
		ef.new, failed, err = c.editFile(file, data, ts)
		if err != nil {
			for _, u := range failed.uses {
				r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: u.File, Line: u.Line, Ref: u.Ref, Digest: failed.digest,
					Message: fmt.Sprintf("%s not edited: %v; pin it by hand", u.Ref, err)})
			}
			return nil, failed
		}
		out[file] = ef
	}
	return out, nil
}

// editedFile is a file's bytes before and after pinning, and the root it
// was found under.
type editedFile struct {
	root     string
	old, new []byte
}

// editFile applies the targets of one file. The images written in a
// manifest or kustomization are edited by Rewrite (its own check
// included); then each values key (of a values file, or of values
// written in a manifest, see blockEdit), from the file's end up, checked
// by reading it back.
func (c Config) editFile(file string, data []byte, ts []*place) ([]byte, *place, error) {
	var rw, vals []*place
	for _, t := range ts {
		if t.edit.Op == render.SetRef || t.edit.Op == render.EntryDigest {
			rw = append(rw, t)
		} else {
			vals = append(vals, t)
		}
	}
	out := data
	if len(rw) > 0 {
		var failed *place
		var err error
		if out, failed, err = c.rewriteFile(file, data, rw); err != nil {
			return nil, failed, err
		}
	}
	// From the end up: a key added moves the lines below it.
	slices.SortStableFunc(vals, func(a, b *place) int {
		return cmp.Or(cmp.Compare(b.edit.Block, a.edit.Block), cmp.Compare(b.line(), a.line()))
	})
	blocks := map[int][]byte{}
	for _, t := range vals {
		var next []byte
		var err error
		if t.edit.Block == 0 {
			next, err = valuesEdit(file, out, t.edit, t.digest)
		} else {
			block, ok := blocks[t.edit.Block]
			if !ok {
				block = t.uses[0].tree.Values(file, t.edit.Block)
			}
			next, blocks[t.edit.Block], err = blockEdit(file, out, block, t.edit, t.digest)
		}
		if err != nil {
			return nil, t, err
		}
		out = next
	}
	return out, nil, nil
}

// line is the line of the file the place's edit is at: its key's, else
// (a digest key to add) the line of the key its use is at.
func (t *place) line() int { return cmp.Or(t.edit.Line, t.uses[0].Line) }

// rewriteFile pins, with Rewrite, the images of a manifest or
// kustomization that targets set.
func (c Config) rewriteFile(file string, data []byte, ts []*place) ([]byte, *place, error) {
	byPos := map[[2]int]*place{}
	o, err := makeOptions(c.options())
	if err != nil {
		return nil, ts[0], err
	}
	o.entryTags = map[[2]int]string{}
	for _, t := range ts {
		pos := [2]int{t.edit.Line, t.edit.Column}
		byPos[pos] = t
		if t.edit.Tag != "" {
			o.entryTags[pos] = t.edit.Tag
		}
	}
	lookup := func(img yamlfile.Image) (string, bool, error) {
		if t := byPos[[2]int{img.Line, img.Column}]; t != nil {
			return t.digest, true, nil
		}
		return "", false, nil
	}
	out, changes, _, err := rewrite(file, data, lookup, o)
	if err != nil {
		return nil, ts[0], err
	}
	for _, ch := range changes {
		if ch.Skipped != "" {
			i := max(0, slices.IndexFunc(ts, func(t *place) bool { return t.edit.Line == ch.Line }))
			return nil, ts[i], errors.New(ch.Skipped)
		}
	}
	return out, nil, nil
}

// renderAgain renders every app of trees with the edited files and
// returns the targets whose app renders more than its images changed, or
// an image otherwise than pinned (findings say which).
func (c Config) renderAgain(r *pinresult.Report, trees []*render.Tree, targets []*place, files map[string]editedFile) []*place {
	edited := map[string][]byte{}
	for p, ef := range files {
		edited[p] = ef.new
	}
	want := map[*render.App]map[int]string{} // app, use index: digest
	for _, t := range targets {
		for _, u := range t.uses {
			i := slices.IndexFunc(u.app.Uses, func(x render.Use) bool { return x.Image == u.Image })
			if want[u.app] == nil {
				want[u.app] = map[int]string{}
			}
			want[u.app][i] = t.digest
		}
	}
	skip := blockObjects(targets, files)
	var drop []*place
	for _, t := range trees {
		if len(t.Apps)+len(t.GitOps) == 0 {
			continue
		}
		again := render.Find(t.Root, append(c.renderOptions(), render.WithFiles(edited))...)
		apps, againApps := slices.Concat(t.Apps, t.GitOps), slices.Concat(again.Apps, again.GitOps)
		for ai, a := range apps {
			var b *render.App
			if ai < len(againApps) && againApps[ai].Dir == a.Dir && ai < len(t.Apps) == (ai < len(again.Apps)) {
				b = againApps[ai]
			}
			if err := sameButPinned(a, b, want[a], skip); err != nil {
				for _, tg := range targets {
					if slices.ContainsFunc(tg.uses, func(u renderedUse) bool { return u.app == a }) {
						drop = append(drop, tg)
						for _, u := range tg.uses {
							r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: u.File, Line: u.Line, Ref: u.Ref, Digest: tg.digest,
								Message: fmt.Sprintf("%s not pinned: with the edit, %s renders otherwise: %v; left as is", u.Ref, a.Dir, err)})
						}
					}
				}
			}
		}
	}
	return drop
}

// blockObjects are the objects (kind/name) whose values targets edit in
// a manifest (a HelmRelease, an Application, a ConfigMap: see
// blockEdit). A kustomization that renders them renders them changed:
// the render of their charts checks those changes, sameButPinned leaves
// them out of the kustomization's.
func blockObjects(targets []*place, files map[string]editedFile) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		if t.edit.Block == 0 {
			continue
		}
		docs, err := yamlfile.Documents(files[t.edit.File].old)
		if err != nil {
			continue
		}
		var at *yaml.Node
		for _, d := range docs {
			if d.Line <= t.edit.Block && len(d.Content) == 1 && d.Content[0].Line <= t.edit.Block {
				at = d
			}
		}
		if k := objectKey(at); at != nil && k != "" {
			out[k] = true
		}
	}
	return out
}

// objectKey is kind/name of the object document d holds.
func objectKey(d *yaml.Node) string {
	if d == nil {
		return ""
	}
	var obj struct {
		Kind     string
		Metadata struct{ Name string }
	}
	if d.Decode(&obj) != nil || obj.Kind == "" {
		return ""
	}
	return obj.Kind + "/" + obj.Metadata.Name
}

// sameButPinned checks b, a's app rendered again, against a: the same
// objects, each image pinned to the digest want gives (by its index in
// a.Uses) and every other unchanged, and nothing else changed.
func sameButPinned(a, b *render.App, want map[int]string, skip map[string]bool) error {
	if b == nil || len(a.Uses) != len(b.Uses) {
		return errors.New("its images are not the same ones")
	}
	for i, u := range a.Uses {
		v := b.Uses[i]
		if u.Kind != v.Kind || u.Namespace != v.Namespace || u.Name != v.Name || u.Container != v.Container || u.Field != v.Field {
			return fmt.Errorf("%s %s %s is not where it was", u.Kind, u.Name, slot(u.Image))
		}
		d, ok := want[i]
		if !ok {
			if u.Ref != v.Ref {
				return fmt.Errorf("%s became %s (%s)", u.Ref, v.Ref, slot(u.Image))
			}
			continue
		}
		old, err1 := parse(u.Ref)
		got, err2 := parse(v.Ref)
		if err1 != nil || err2 != nil || got.Repo != old.Repo || got.Digest != d || got.Tag != old.Tag && got.Tag != "" {
			return fmt.Errorf("%s became %s, not %s (%s)", u.Ref, v.Ref, withDigest(u.Ref, d), slot(u.Image))
		}
	}
	x, err1 := withoutImages(a.Output, skip)
	y, err2 := withoutImages(b.Output, skip)
	if err := cmp.Or(err1, err2); err != nil {
		return err
	}
	if !bytes.Equal(x, y) {
		return fmt.Errorf("more than its images changes:\n%s", firstLines(pinresult.Diff("rendered", x, y), 12))
	}
	return nil
}

// withoutImages is rendered output with every container image emptied,
// and without the objects skip names (kind/name), written again.
func withoutImages(out []byte, skip map[string]bool) ([]byte, error) {
	sites, err := yamlfile.Sites("rendered", out)
	if err != nil {
		return nil, err
	}
	docs, err := yamlfile.Documents(out)
	if err != nil {
		return nil, err
	}
	pos := map[[2]int]bool{}
	for _, s := range sites {
		pos[[2]int{s.Value.Line, s.Value.Column}] = true
	}
	var buf bytes.Buffer
	for _, d := range docs {
		if skip[objectKey(d)] {
			continue
		}
		eachScalar(d, func(n *yaml.Node) {
			if pos[[2]int{n.Line, n.Column}] {
				n.Value = ""
			}
		})
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…\n")
	}
	return strings.TrimSuffix(strings.Join(lines, ""), "\n")
}

// writeRendered records the edited files in r, and with Write replaces
// them; one Change per place edited.
func (c Config) writeRendered(r *pinresult.Report, targets []*place, files map[string]editedFile) {
	written := map[string]*pinresult.Finding{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		ef := files[p]
		i := slices.IndexFunc(r.Files, func(f pinresult.File) bool { return filepath.Clean(f.Path) == p })
		if i < 0 {
			r.Files = append(r.Files, pinresult.File{Path: p, Old: ef.old})
			i = len(r.Files) - 1
		}
		f := &r.Files[i]
		if f.Changed() {
			// A values file that is a manifest too, and was pinned as one.
			written[p] = &pinresult.Finding{Kind: pinresult.KindNotEdited, File: p, Message: "pinned as a manifest already; its values are left as is: run pin again"}
			r.Findings = append(r.Findings, *written[p])
			continue
		}
		f.New = ef.new
		if c.Write {
			if fd := c.replace(parsedFile{root: ef.root, path: p, data: ef.old}, ef.new); fd != nil {
				r.Findings = append(r.Findings, *fd)
				written[p] = fd
				f.New = nil
			}
		}
	}
	for _, t := range targets {
		u := t.uses[0]
		ch := pinresult.Change{File: t.edit.File, Line: cmp.Or(t.edit.Line, u.Line), Kind: u.Kind, Namespace: u.Namespace, Name: u.Name,
			Container: u.Container, Field: "image", Old: u.Ref, New: withDigest(u.Ref, t.digest)}
		if u.Field == yamlfile.FieldImageVolumes {
			ch.Container, ch.Volume = "", u.Container
		}
		if fd := written[t.edit.File]; fd != nil {
			ch.Skipped = "file not written: " + string(fd.Kind)
		}
		r.Changes = append(r.Changes, ch)
	}
}

// valuesEdit pins one values key of a values file: the key's value gains
// @digest (AppendDigest), or the digest key is set or added (DigestKey).
// Only the bytes of the value change (an added key is a line of its own,
// or ", digest: …" in a flow mapping); the result must read back as the
// same values with that one change.
func valuesEdit(file string, data []byte, e render.Edit, d string) ([]byte, error) {
	docs, err := yamlfile.Documents(data)
	if err != nil {
		return nil, err
	}
	before, err := decodeValues(docs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	shared := sharedNodes(docs)
	t := newText(data)
	var edits []edit
	var newValue string
	var doc int
	switch e.Op {
	case render.AppendDigest:
		n, i := scalarAt(docs, e.Line, e.Column)
		if n == nil || e.Path.Find(docs[i]) != n {
			return nil, fmt.Errorf("%s:%d: %s is not there any more", file, e.Line, e.Path)
		}
		doc = i
		if shared[n] {
			return nil, fmt.Errorf("%s:%d: %s: %s", file, e.Line, e.Path, skippedAlias)
		}
		base, _, _ := strings.Cut(n.Value, "@")
		if e.Latest && !hasTag(base) {
			base += ":latest"
		}
		newValue = base + "@" + d
		if edits, err = valueEdit(t, n, newValue); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", file, e.Line, e.Path, err)
		}
	case render.DigestKey:
		newValue = d
		parentPath, key, ok := e.Path.Split()
		if !ok {
			return nil, fmt.Errorf("%s: %s is not a mapping key", file, e.Path)
		}
		m, i := parentPath.Mapping(docs)
		if m == nil {
			return nil, fmt.Errorf("%s: no %s to add %s to", file, cmp.Or(string(parentPath), "top level"), key)
		}
		doc = i
		if shared[m] {
			return nil, fmt.Errorf("%s: %s: %s", file, e.Path, skippedAlias)
		}
		if edits, err = digestKeyEdit(t, m, key, d); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, e.Path, err)
		}
	default:
		return nil, fmt.Errorf("%s: unknown edit %s", file, e.Op)
	}
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(a.start, b.start) })
	out, err := apply(data, edits)
	if err != nil {
		return nil, err
	}
	if err := valuesCheck(before, out, doc, e.Path, newValue); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", file, errInternal, err)
	}
	return out, nil
}

// sharedNodes are the nodes an alias points to, and every node under
// them: an edit there changes each place that names them.
func sharedNodes(docs []*yaml.Node) map[*yaml.Node]bool {
	targets := map[*yaml.Node]bool{}
	for _, d := range docs {
		yamlfile.Aliased(d, targets)
	}
	out := map[*yaml.Node]bool{}
	var mark func(n *yaml.Node, depth int)
	mark = func(n *yaml.Node, depth int) {
		if n == nil || out[n] || depth > 10_000 {
			return
		}
		out[n] = true
		for _, c := range n.Content {
			mark(c, depth+1)
		}
	}
	for n := range targets {
		mark(n, 0)
	}
	return out
}

// digestKeyEdit sets key of mapping m to d: its value replaced (an empty
// or null one included), or the key added after the mapping's tag key,
// else after its last key with a one-line value.
func digestKeyEdit(t *text, m *yaml.Node, key, d string) ([]edit, error) {
	var after, tag *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch {
		case k.Value == key:
			return setScalar(t, k, v, d)
		case v.Kind != yaml.ScalarNode:
		case k.Value == "tag":
			tag = v
		default:
			after = v
		}
	}
	after = cmp.Or(tag, after)
	if after == nil {
		return nil, errors.New("no key to add it after")
	}
	sp, err := t.scalar(after)
	if err != nil {
		return nil, err
	}
	if m.Style&yaml.FlowStyle != 0 {
		end := sp.end + closeQuote(t, after)
		return []edit{{end, end, ", " + key + ": " + d}}, nil
	}
	end, br := t.lineEnd(sp.end)
	return []edit{{end, end, br + strings.Repeat(" ", m.Column-1) + key + ": " + d}}, nil
}

// setScalar sets the value v of key k to s: a value with text keeps its
// quotes; an empty quoted one gets s between its quotes; "~" or "null" is
// replaced; an empty one gets " s" after the key's colon.
func setScalar(t *text, k, v *yaml.Node, s string) ([]edit, error) {
	if v.Kind != yaml.ScalarNode {
		return nil, errors.New("not a scalar")
	}
	if v.Value != "" && v.Tag != "!!null" {
		return valueEdit(t, v, s)
	}
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		i, err := t.offset(v)
		if err != nil || i+1 >= len(t.data) || t.data[i] != t.data[i+1] {
			return nil, errStyle
		}
		return []edit{{i + 1, i + 1, s}}, nil
	}
	ksp, err := t.scalar(k)
	if err != nil {
		return nil, err
	}
	i := ksp.end
	for i < len(t.data) && isBlank(t.data[i]) {
		i++
	}
	if i >= len(t.data) || t.data[i] != ':' {
		return nil, errStyle
	}
	i++
	j := i
	for j < len(t.data) && isBlank(t.data[j]) {
		j++
	}
	for _, null := range []string{"~", "null", "Null", "NULL"} {
		if bytes.HasPrefix(t.data[j:], []byte(null)) {
			return []edit{{j, j + len(null), s}}, nil
		}
	}
	if j < len(t.data) && t.data[j] != '#' && breakLen(t.data, j) == 0 {
		return nil, errStyle
	}
	return []edit{{i, i, " " + s}}, nil
}

// decodeValues reads each document's values.
func decodeValues(docs []*yaml.Node) ([]any, error) {
	var out []any
	for _, d := range docs {
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// valuesCheck reads out back and makes sure it differs from a, the
// values it was made from (changed here), only in the value at path of
// document doc, which out holds as value.
func valuesCheck(a []any, out []byte, doc int, path render.ValuesPath, value string) error {
	docs, err := yamlfile.Documents(out)
	if err != nil {
		return fmt.Errorf("result does not parse: %w", err)
	}
	b, err := decodeValues(docs)
	if err != nil {
		return fmt.Errorf("result does not parse: %w", err)
	}
	if len(a) != len(b) || doc >= len(a) {
		return errors.New("result has other documents")
	}
	steps, err := path.Steps()
	if err != nil {
		return err
	}
	var ok bool
	if a[doc], ok = setAt(a[doc], steps, value); !ok {
		return fmt.Errorf("%s: no such key", path)
	}
	if !reflect.DeepEqual(a, b) {
		return errors.New("result holds other changes")
	}
	return nil
}

// setAt sets the value at steps under v, adding the last key when it is
// not there.
func setAt(v any, steps []render.Step, value any) (any, bool) {
	if len(steps) == 0 {
		return value, true
	}
	st := steps[0]
	var ok bool
	switch x := v.(type) {
	case map[string]any:
		if !st.IsIndex {
			x[st.Key], ok = setAt(x[st.Key], steps[1:], value)
		}
	case map[any]any: // a mapping with a key that is not a string
		if !st.IsIndex {
			x[st.Key], ok = setAt(x[st.Key], steps[1:], value)
		}
	case []any:
		if st.IsIndex && st.Index < len(x) {
			x[st.Index], ok = setAt(x[st.Index], steps[1:], value)
		}
	}
	return v, ok
}

// eachScalar calls fn on every scalar under n.
func eachScalar(n *yaml.Node, fn func(*yaml.Node)) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode {
		fn(n)
	}
	for _, c := range n.Content {
		eachScalar(c, fn)
	}
}

// scalarAt finds the scalar at line and column, and its document.
func scalarAt(docs []*yaml.Node, line, col int) (*yaml.Node, int) {
	for i, d := range docs {
		var found *yaml.Node
		eachScalar(d, func(n *yaml.Node) {
			if n.Line == line && n.Column == col {
				found = n
			}
		})
		if found != nil {
			return found, i
		}
	}
	return nil, 0
}
