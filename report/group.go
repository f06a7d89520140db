package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/regcheck/regcheck/types"
)

// The reports people read (markdown, HTML) say, for each verdict, the one
// thing to do about its images; each finding then says what to do about it.
var verdictActions = map[types.Verdict]string{
	types.Broken: "A node cannot pull these images. Do not restart, drain or reschedule their pods: " +
		"rebuild and push each image (its findings name the manifest or blob that is gone), then scan again.",
	types.Unknown: "The registry could not be asked, so nothing is proven either way. " +
		"Fix what each finding names (credentials, certificates, reachability), then scan again.",
	types.AtRisk: "These pull today, but the next pull may fail or run other bits. " +
		"Act before their pods next restart: each finding says how.",
	types.OK: "Nothing to do.",
}

// inputsAction is what to do about inputs not read.
const inputsAction = "These inputs were not read, so their images were not checked: fix or exclude them, then scan again."

// verdictOrder is the order reports list verdicts in: worst first.
var verdictOrder = []types.Verdict{types.Broken, types.Unknown, types.AtRisk, types.OK}

// namespaceGroup is the images used in one namespace, by workload.
type namespaceGroup struct {
	// Namespace is "" for uses that name none (a file without one, the
	// command line).
	Namespace string
	Workloads []*workloadGroup
}

// workloadGroup is the images one workload uses. Kind and Name are both ""
// for uses that name no workload (the command line, an image list).
type workloadGroup struct {
	Kind, Name string
	Images     []workloadImage
}

// workloadImage is an image and its uses in one workload.
type workloadImage struct {
	Image *types.Image
	Uses  []types.Use
}

// rank is the group's worst image's verdict rank (0: broken).
func (w *workloadGroup) rank() int {
	r := types.OK.Rank()
	for _, wi := range w.Images {
		r = min(r, wi.Image.Verdict.Rank())
	}
	return r
}

func (n *namespaceGroup) rank() int {
	r := types.OK.Rank()
	for _, w := range n.Workloads {
		r = min(r, w.rank())
	}
	return r
}

// byWorkload groups images by the namespace and workload of each use: an
// image used by two workloads is under both. Namespaces, workloads and
// images come worst first, then by name; uses naming no namespace or no
// workload come after those that do.
func byWorkload(images []*types.Image) []*namespaceGroup {
	type key struct{ ns, kind, name string }
	groups := map[string]*namespaceGroup{}
	workloads := map[key]*workloadGroup{}
	var out []*namespaceGroup
	for _, im := range images {
		uses := im.Uses
		if len(uses) == 0 {
			uses = []types.Use{{}}
		}
		seen := map[key]int{} // index of the image in its workload's list
		for _, u := range uses {
			k := key{u.Namespace, u.Kind, u.Name}
			w := workloads[k]
			if w == nil {
				w = &workloadGroup{Kind: u.Kind, Name: u.Name}
				workloads[k] = w
				g := groups[u.Namespace]
				if g == nil {
					g = &namespaceGroup{Namespace: u.Namespace}
					groups[u.Namespace] = g
					out = append(out, g)
				}
				g.Workloads = append(g.Workloads, w)
			}
			i, ok := seen[k]
			if !ok {
				i = len(w.Images)
				seen[k] = i
				w.Images = append(w.Images, workloadImage{Image: im})
			}
			if !u.IsZero() {
				w.Images[i].Uses = append(w.Images[i].Uses, u)
			}
		}
	}
	for _, g := range out {
		for _, w := range g.Workloads {
			slices.SortStableFunc(w.Images, func(a, b workloadImage) int {
				return cmp.Or(cmp.Compare(a.Image.Verdict.Rank(), b.Image.Verdict.Rank()), strings.Compare(a.Image.Reference, b.Image.Reference))
			})
		}
		slices.SortStableFunc(g.Workloads, func(a, b *workloadGroup) int {
			return cmp.Or(cmp.Compare(a.rank(), b.rank()), lastIfEmpty(a.Name, b.Name),
				strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
		})
	}
	slices.SortStableFunc(out, func(a, b *namespaceGroup) int {
		return cmp.Or(cmp.Compare(a.rank(), b.rank()), lastIfEmpty(a.Namespace, b.Namespace), strings.Compare(a.Namespace, b.Namespace))
	})
	return out
}

// lastIfEmpty orders "" after any other string, and leaves the rest equal.
func lastIfEmpty(a, b string) int {
	switch {
	case a == "" && b != "":
		return 1
	case a != "" && b == "":
		return -1
	}
	return 0
}

// namespaceTitle names a namespace group.
func namespaceTitle(ns string, workloads []*workloadGroup) string {
	switch {
	case ns != "":
		return "Namespace " + ns
	case len(workloads) == 1 && workloads[0].Kind == "" && workloads[0].Name == "":
		return noWorkload
	}
	return "No namespace given"
}

// noWorkload titles the uses that name no workload.
const noWorkload = "Not in a workload (command line, image lists)"

// workloadTitle names a workload group: "Deployment signaling".
func workloadTitle(w *workloadGroup) string {
	if w.Kind == "" && w.Name == "" {
		return noWorkload
	}
	return strings.TrimSpace(w.Kind + " " + w.Name)
}

// useWhere says where one use of an image is, within its workload: the
// container or image volume, the manifest's line, the pod and node; the source for a use
// of no workload ("images.txt:3", "command line").
func useWhere(u types.Use) string {
	var parts []string
	if u.Container != "" {
		parts = append(parts, "container "+u.Container)
	}
	if u.Volume != "" {
		parts = append(parts, "volume "+u.Volume)
	}
	if u.File != "" {
		loc := u.File
		if u.Line > 0 {
			loc += ":" + strconv.Itoa(u.Line)
		}
		parts = append(parts, loc)
	}
	if u.Pod != "" {
		parts = append(parts, "pod "+u.Pod)
	}
	if u.Node != "" {
		parts = append(parts, "on "+u.Node)
	}
	if len(parts) == 0 {
		switch u.Source {
		case "args":
			return "command line"
		case "":
			return "-"
		}
		return u.Source
	}
	return strings.Join(parts, ", ")
}

// counts says how many images have each verdict and how many requests and
// inputs not read and skipped there were.
type counts struct {
	Verdicts         map[types.Verdict]int
	Requests         int
	NotRead, Skipped int
	Critical, High   int
	Warning, Info    int
}

func countOf(r *types.Result) counts {
	c := counts{Verdicts: r.Count()}
	for _, rc := range r.Requests {
		c.Requests += rc.Count
	}
	for _, ie := range r.InputErrors {
		if ie.Notice {
			c.Skipped++
		} else {
			c.NotRead++
		}
	}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			switch f.Severity {
			case types.SeverityCritical:
				c.Critical++
			case types.SeverityHigh:
				c.High++
			case types.SeverityWarning:
				c.Warning++
			default:
				c.Info++
			}
		}
	}
	return c
}
