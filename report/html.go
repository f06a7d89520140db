package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/types"
)

// HTML writes the result as one self-contained page (inline CSS and a
// small inline script; nothing fetched): what to do first, per verdict;
// then the broken, unknown and at-risk images by namespace and workload,
// each with its findings, their advice and its tree (tag, index, children,
// config and layers, missing nodes marked); then the ok images, folded;
// then the inputs not read. A text box filters the images and a menu sorts
// them by verdict or name, both kept in the address (#filter=…&sort=name);
// without the script the page reads the same, unfiltered. Everything from the scan goes through Printable (keeping
// line feeds), then html/template's escaping.
func HTML(w io.Writer, r *types.Result) error {
	c := countOf(r)
	d := htmlPage{counts: c, InputErrors: r.InputErrors, Duration: r.Duration.Round(time.Millisecond).String(), Total: len(r.Images)}
	if !r.Started.IsZero() {
		d.Started = r.Started.UTC().Format(time.RFC3339)
	}
	d.Broken, d.Unknown, d.AtRisk, d.OK = c.Verdicts[types.Broken], c.Verdicts[types.Unknown], c.Verdicts[types.AtRisk], c.Verdicts[types.OK]
	for _, v := range verdictOrder {
		if n := c.Verdicts[v]; n > 0 {
			d.Todo = append(d.Todo, htmlTodo{Verdict: string(v), Count: n, Action: verdictActions[v]})
		}
	}
	var act []*types.Image
	for _, im := range r.Sorted() {
		if im.Verdict == types.OK {
			d.OKImages = append(d.OKImages, htmlImageOf(workloadImage{Image: im, Uses: im.Uses}, "", nil))
		} else {
			act = append(act, im)
		}
	}
	slices.SortStableFunc(d.OKImages, func(a, b htmlImage) int { return strings.Compare(a.Reference, b.Reference) })
	for _, g := range byWorkload(act) {
		hg := htmlNamespace{Title: namespaceTitle(g.Namespace, g.Workloads), Name: sortName(g.Namespace), Rank: g.rank()}
		for _, wl := range g.Workloads {
			hw := htmlWorkload{Name: sortName(wl.Kind + " " + wl.Name), Rank: wl.rank()}
			if t := workloadTitle(wl); t != hg.Title {
				hw.Title = t
			}
			for _, wi := range wl.Images {
				hw.Images = append(hw.Images, htmlImageOf(wi, g.Namespace, wl))
			}
			hg.Workloads = append(hg.Workloads, hw)
		}
		d.Groups = append(d.Groups, hg)
	}
	return htmlTemplate.Execute(w, d)
}

type htmlPage struct {
	counts
	Todo                        []htmlTodo
	Groups                      []htmlNamespace
	OKImages                    []htmlImage
	InputErrors                 []types.InputError
	Total                       int
	Broken, Unknown, AtRisk, OK int
	Started, Duration           string
}

// htmlTodo is one line of what to do: a verdict, its images, its action.
type htmlTodo struct {
	Verdict string
	Count   int
	Action  string
}

type htmlNamespace struct {
	Title, Name string
	Rank        int
	Workloads   []htmlWorkload
}

type htmlWorkload struct {
	Title, Name string // Title "" under a namespace of the same title
	Rank        int
	Images      []htmlImage
}

// htmlImage is one image where it is drawn: in a workload (its uses there)
// or in the ok list (all its uses).
type htmlImage struct {
	*types.Image
	Rank   int
	Uses   []string
	Search string // what the filter matches, lowercased
	Tree   *treeNode
}

func htmlImageOf(wi workloadImage, ns string, wl *workloadGroup) htmlImage {
	im := wi.Image
	h := htmlImage{Image: im, Rank: im.Verdict.Rank(), Tree: imageTree(im)}
	words := []string{im.Reference, im.Digest, string(im.Verdict), ns}
	if wl != nil {
		words = append(words, wl.Kind, wl.Name)
	}
	for _, u := range wi.Uses {
		s := useWhere(u)
		if wl == nil { // the ok list: name the workload too
			s = useString(u)
			if s == "" {
				s = useWhere(u)
			}
		}
		h.Uses = append(h.Uses, s)
		words = append(words, useString(u), u.Source)
	}
	for _, f := range im.Findings {
		words = append(words, string(f.Code), f.Platform, f.Message)
	}
	h.Search = strings.ToLower(strings.Join(words, " "))
	return h
}

// sortName is a group's name to sort by; groups without one sort last.
func sortName(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "~"
	}
	return s
}

// treeNode is one node of an image's tree as the page draws it: the
// reference, what it resolved to, and below it every manifest and blob
// the walk reached, with its state.
type treeNode struct {
	// Kind is tag, digest, index, manifest, attestation, config or layer;
	// Label names it ("v1", "linux/amd64", "2" for layer 2).
	Kind, Label string
	Digest      string
	MediaType   string
	// State is "" (there), missing, absent (no child for a platform),
	// mismatch (other bytes), unchecked (a fault) or skipped (not walked).
	State string
	// Why is the finding's code; Note says more.
	Why, Note string
	Children  []*treeNode
}

// imageTree draws an image's tree from the walk's (Image.Tree), under its
// tag, or alone for a pinned reference.
func imageTree(im *types.Image) *treeNode {
	ref, err := imageref.Parse(im.Reference)
	if err != nil {
		return &treeNode{Kind: "reference", Label: im.Reference, State: "invalid", Why: string(types.InvalidReference)}
	}
	root := &treeNode{Kind: "tag", Label: ref.EffectiveTag()}
	if im.Tree == nil {
		// Never resolved: the tag is gone, or the registry did not answer.
		for _, f := range im.Findings {
			if f.Code == types.TagMissing {
				root.State, root.Why = "missing", string(f.Code)
			} else if f.Code.Fault() && root.State == "" {
				root.State, root.Why = "unchecked", string(f.Code)
			}
		}
		return root
	}
	top := fromNode(im.Tree)
	top.Note = strings.TrimPrefix(top.Note+"; ", "; ") + fmt.Sprintf("%s and %s checked", plural(im.Manifests, "manifest"), plural(im.Blobs, "blob"))
	if ref.Pinned() {
		top.Label = "pinned"
		return top
	}
	root.Children = []*treeNode{top}
	return root
}

// fromNode draws one node of the walk's tree and everything below it.
func fromNode(n *types.Node) *treeNode {
	t := &treeNode{Kind: n.Kind, Label: n.Label, Digest: n.Digest, MediaType: n.MediaType, State: n.State, Why: string(n.Code)}
	if n.Kind == "layer" {
		t.Label = strings.TrimPrefix(n.Label, "layer ")
	}
	if n.State == "absent" {
		t.Note = "the index has no manifest for this platform"
	}
	for _, c := range n.Children {
		t.Children = append(t.Children, fromNode(c))
	}
	// An attestation is drawn as what it attests to, not as a platform.
	for i, c := range n.Children {
		if c.Kind != "attestation" {
			continue
		}
		t.Children[i].Label, t.Children[i].Note = "", "for "+types.ShortDigest(c.Subject)
		for _, m := range n.Children {
			if m.Digest == c.Subject && m.Label != "" {
				t.Children[i].Note = "for the " + m.Label + " manifest " + types.ShortDigest(c.Subject)
			}
		}
	}
	return t
}

// Gone reports whether the node is not there (missing, absent, other
// bytes): the page strikes it through.
func (n *treeNode) Gone() bool {
	return n.State == "missing" || n.State == "absent" || n.State == "mismatch" || n.State == "invalid"
}

// mediaTypeNames are the names people know the manifest media types by.
var mediaTypeNames = map[string]string{
	"application/vnd.oci.image.index.v1+json":                   "OCI index",
	"application/vnd.oci.image.manifest.v1+json":                "OCI manifest",
	"application/vnd.docker.distribution.manifest.list.v2+json": "Docker manifest list",
	"application/vnd.docker.distribution.manifest.v2+json":      "Docker manifest",
	"application/vnd.docker.distribution.manifest.v1+json":      "Docker schema 1",
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"short": func(d string) string { return printable.Lines(short(d)) },
	"p":     func(s any) string { return printable.Lines(fmt.Sprint(s)) },
	"sd":    func(s string) string { return printable.Lines(shortDigests(s)) },
	"mt": func(s string) string {
		if n, ok := mediaTypeNames[s]; ok {
			return n
		}
		return printable.Lines(s)
	},
	"where":  func(ie types.InputError) string { return printable.Lines(inputLocation(ie)) },
	"plural": plural,
}).Parse(htmlSource))

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>regcheck: {{.Broken}} broken, {{.Unknown}} unknown, {{.AtRisk}} at-risk, {{.OK}} ok</title>
<style>
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1.5em; max-width: 72em; color: var(--fg); }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
h2 { font-size: 1.2em; margin: 1.6em 0 .5em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; padding-bottom: .2em; border-bottom: 1px solid var(--line); }
h4 { font-size: .95em; margin: .9em 0 .4em; color: var(--muted); }
[hidden] { display: none !important; }
code, .ref { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; word-break: break-all; }
.meta { color: var(--muted); margin: 0 0 1em; }
.todo { list-style: none; padding: 0; margin: 0; display: grid; gap: .5em; }
.todo li { display: grid; grid-template-columns: 6.5em 3em 1fr; gap: .8em; align-items: baseline; border: 1px solid var(--line); border-left-width: 5px; border-radius: 6px; padding: .55em .8em; }
.todo b { font-size: 1.35em; text-align: right; }
.todo .t-broken { border-left-color: #cf222e; background: #fff5f5; }
.todo .t-unknown { border-left-color: #818b98; }
.todo .t-at-risk { border-left-color: #bf8700; background: #fffcf0; }
.todo .t-ok { border-left-color: #1a7f37; }
.todo .t-inputs { border-left-color: #cf222e; }
.controls { display: flex; gap: 1em; align-items: center; flex-wrap: wrap; margin: 1.4em 0 0; padding: .6em .8em; background: var(--bg2); border-radius: 6px; }
.controls input { font: inherit; padding: .3em .5em; width: 22em; max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
.controls select { font: inherit; padding: .25em; }
.img { border: 1px solid var(--line); border-left-width: 5px; border-radius: 6px; padding: .6em .9em; margin: 0 0 .7em; }
.img.i-broken { border-left-color: #cf222e; }
.img.i-unknown { border-left-color: #818b98; }
.img.i-at-risk { border-left-color: #bf8700; }
.img.i-ok { border-left-color: #1a7f37; }
.img > header { display: flex; gap: .6em; align-items: baseline; flex-wrap: wrap; }
.img .ref { font-weight: 600; font-size: 1em; }
.uses { color: var(--muted); margin: .2em 0 .4em; }
ul.f { margin: .3em 0; padding-left: 1.1em; }
ul.f li { margin-bottom: .35em; }
.advice { display: block; color: #0a3069; }
.v, .s, .st { display: inline-block; border-radius: 4px; padding: 0 .4em; font-weight: 600; font-size: .85em; white-space: nowrap; }
.v-broken, .s-critical, .st-missing, .st-absent, .st-mismatch, .st-invalid { background: #ffebe9; color: #a40e26; }
.s-high { background: #fff1e5; color: #9a3412; }
.v-unknown, .st-unchecked, .st-skipped { background: #eef1f4; color: #424a53; }
.v-at-risk, .s-warning { background: #fff8c5; color: #7d4e00; }
.v-ok { background: #dafbe1; color: #116329; }
.s-info { background: #ddf4ff; color: #0550ae; }
ul.tree, ul.tree ul { list-style: none; margin: 0; padding-left: 1.2em; }
ul.tree { padding-left: 0; margin: .4em 0 .2em; }
ul.tree ul li { position: relative; }
ul.tree ul li::before { content: ""; position: absolute; left: -.9em; top: 0; height: .8em; width: .7em; border-left: 1px solid #afb8c1; border-bottom: 1px solid #afb8c1; }
.node { display: inline-flex; gap: .45em; align-items: baseline; flex-wrap: wrap; padding: .05em 0; }
.node .k { font-weight: 600; }
.node.gone > .k { color: #a40e26; }
.node.gone > .d { color: #a40e26; text-decoration: line-through; }
.node .note, .node .mt { color: var(--muted); }
details.tree-box > summary, details.ok > summary { cursor: pointer; color: var(--muted); }
details.ok > summary { font-size: 1.05em; font-weight: 600; color: var(--fg); margin: 1.2em 0 .6em; }
details.ok .img { padding: .4em .8em; }
ul.inputs { padding-left: 1.1em; }
</style>
</head>
<body>
<h1>regcheck: {{.Broken}} broken, {{.Unknown}} unknown, {{.AtRisk}} at-risk, {{.OK}} ok</h1>
<p class="meta">{{with .Started}}Started {{.}}, {{end}}{{plural .Total "image"}} in {{.Duration}}, {{plural .Requests "registry request"}}; {{.Critical}} critical, {{.High}} high, {{.Warning}} warning and {{.Info}} info findings.</p>
<h2>What to do</h2>
<ul class="todo">
{{- range .Todo}}
<li class="t-{{.Verdict}}"><span><span class="v v-{{.Verdict}}">{{.Verdict}}</span></span><b>{{.Count}}</b><span>{{.Action}}</span></li>
{{- end}}
{{- if .NotRead}}
<li class="t-inputs"><span><span class="s s-critical">inputs not read</span></span><b>{{.NotRead}}</b><span>` + inputsAction + `</span></li>
{{- end}}
</ul>
<div class="controls" id="controls" hidden>
<label>Filter <input id="filter" type="search" placeholder="image, workload, namespace, finding" autocomplete="off"></label>
<label>Sort by <select id="sort"><option value="verdict">verdict</option><option value="name">name</option></select></label>
<span id="shown" class="meta"></span>
</div>
{{- if .Groups}}
<section id="act">
<h2>Broken, unknown and at-risk images, by namespace and workload</h2>
<div class="sortable" id="groups">
{{- range .Groups}}
<section class="ns" data-rank="{{.Rank}}" data-name="{{p .Name}}">
<h3>{{p .Title}}</h3>
<div class="sortable">
{{- range .Workloads}}
<section class="wl" data-rank="{{.Rank}}" data-name="{{p .Name}}">
{{- with .Title}}
<h4>{{p .}}</h4>
{{- end}}
<div class="sortable">
{{- range .Images}}{{template "image" .}}{{end}}
</div>
</section>
{{- end}}
</div>
</section>
{{- end}}
</div>
</section>
{{- end}}
{{- if .OKImages}}
<details class="ok" id="ok">
<summary>{{plural (len .OKImages) "ok image"}}: nothing to do</summary>
<div class="sortable">
{{- range .OKImages}}{{template "image" .}}{{end}}
</div>
</details>
{{- end}}
{{- if .InputErrors}}
<h2>Inputs not read</h2>
<p class="meta">The images of an input in error were not scanned: the scan is incomplete. A notice is an input skipped on purpose.</p>
<ul class="inputs">
{{- range .InputErrors}}
<li>{{if .Notice}}<span class="s s-info">notice</span>{{else}}<span class="s s-critical">error</span>{{end}} <code>{{where .}}</code> {{p .Message}}</li>
{{- end}}
</ul>
{{- end}}
<script>
(function () {
  var filter = document.getElementById("filter"), sort = document.getElementById("sort");
  var shown = document.getElementById("shown"), ok = document.getElementById("ok");
  var images = document.querySelectorAll(".img");
  function visible(el) { return el.querySelector(".img:not([hidden])") !== null; }
  function apply() {
    var q = filter.value.trim().toLowerCase(), n = 0;
    images.forEach(function (el) {
      el.hidden = q !== "" && el.getAttribute("data-search").indexOf(q) < 0;
      if (!el.hidden) { n++; }
    });
    document.querySelectorAll(".wl, .ns, #act").forEach(function (el) { el.hidden = !visible(el); });
    if (ok) {
      ok.hidden = !visible(ok);
      if (q !== "") { ok.open = visible(ok); }
    }
    shown.textContent = q === "" ? "" : n + " of " + images.length + " images shown";
  }
  function order() {
    var byName = sort.value === "name";
    document.querySelectorAll(".sortable").forEach(function (box) {
      var items = Array.prototype.slice.call(box.children);
      items.sort(function (a, b) {
        var ra = Number(a.getAttribute("data-rank")), rb = Number(b.getAttribute("data-rank"));
        var na = a.getAttribute("data-name"), nb = b.getAttribute("data-name");
        var byRank = ra - rb, byText = na < nb ? -1 : (na > nb ? 1 : 0);
        return byName ? (byText || byRank) : (byRank || byText);
      });
      items.forEach(function (el) { box.appendChild(el); });
    });
  }
  // The filter and the order are kept in the address (#filter=…&sort=name),
  // so that a link shows what its sender saw.
  function save() {
    var h = new URLSearchParams();
    if (filter.value !== "") { h.set("filter", filter.value); }
    if (sort.value !== "verdict") { h.set("sort", sort.value); }
    try { history.replaceState(null, "", "#" + h.toString()); } catch (e) { /* a file: page may refuse */ }
  }
  var h = new URLSearchParams(location.hash.slice(1));
  filter.value = h.get("filter") || "";
  sort.value = h.get("sort") === "name" ? "name" : "verdict";
  filter.addEventListener("input", function () { apply(); save(); });
  sort.addEventListener("change", function () { order(); save(); });
  document.getElementById("controls").hidden = false;
  if (sort.value !== "verdict") { order(); }
  if (filter.value !== "") { apply(); }
})();
</script>
</body>
</html>
{{define "image"}}
<article class="img i-{{p .Verdict}}" data-rank="{{.Rank}}" data-name="{{p .Reference}}" data-search="{{p .Search}}">
<header><span class="v v-{{p .Verdict}}">{{p .Verdict}}</span> <span class="ref">{{p .Reference}}</span>{{if .Digest}} <code title="{{p .Digest}}">{{short .Digest}}</code>{{end}}</header>
{{- if .Uses}}
<div class="uses">{{range $i, $u := .Uses}}{{if $i}} · {{end}}{{p $u}}{{end}}</div>
{{- end}}
{{- if .Findings}}
<ul class="f">
{{- range .Findings}}
<li><span class="s s-{{.Severity}}">{{.Severity}}</span> <code>{{p .Code}}</code> {{sd .Message}}{{with .Advice}}<span class="advice">→ {{sd .}}</span>{{end}}</li>
{{- end}}
</ul>
{{- end}}
<details class="tree-box"{{if ne (p .Verdict) "ok"}} open{{end}}><summary>Image tree</summary>
<ul class="tree">{{template "node" .Tree}}</ul>
</details>
</article>
{{- end}}
{{define "node"}}
<li><span class="node{{if .Gone}} gone{{end}}"><span class="k">{{.Kind}}</span>{{with .Label}} <span>{{p .}}</span>{{end}}{{with .Digest}} <code class="d" title="{{p .}}">{{short .}}</code>{{end}}{{with .MediaType}} <span class="mt">{{mt .}}</span>{{end}}{{with .State}} <span class="st st-{{.}}">{{.}}</span>{{end}}{{with .Why}} <code>{{p .}}</code>{{end}}{{with .Note}} <span class="note">{{p .}}</span>{{end}}</span>
{{- if .Children}}
<ul>
{{- range .Children}}{{template "node" .}}{{end}}
</ul>
{{- end}}
</li>
{{- end}}
`
