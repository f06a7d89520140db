package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// Targets turns an inventory into scan targets: one use per container and
// per image volume, with its owner, pod, node, pull policy and running
// digest.
func Targets(inv *inventory.Inventory) []types.Target {
	out := make([]types.Target, 0, len(inv.Containers))
	for _, c := range inv.Containers {
		u := useOf(c)
		u.ImageID = c.ImageID
		usePlatforms(inv, c, &u)
		out = append(out, types.Target{Ref: c.Image, Uses: []types.Use{u}})
	}
	return out
}

// useOf is the use an inventory entry makes of its image: a container's,
// or an image volume's (Use.Volume). Platforms and ImageID are the
// caller's to add.
func useOf(c inventory.Container) types.Use {
	u := types.Use{Source: "cluster", Kind: c.OwnerKind, Namespace: c.Namespace, Name: c.OwnerName,
		Pod: c.Pod, Node: c.Node, PullPolicy: c.PullPolicy, RunningDigest: c.RunningDigest}
	if c.ImageVolume() {
		u.Volume = c.Container
	} else {
		u.Container = c.Container
	}
	return u
}

// RunningTargets returns one target per distinct digest a container runs
// (or an image volume mounts), as repo@digest: what a reschedule onto a
// node without the image, or a rollback, needs the registry to still serve.
func RunningTargets(inv *inventory.Inventory) []types.Target {
	byRef := map[string]int{}
	var out []types.Target
	var counts []int
	refs := make([]string, len(inv.Containers)) // each container's target, "" for none
	for i, c := range inv.Containers {
		if c.RunningDigest == "" {
			continue
		}
		image, _ := imageref.Parse(c.Image) // the zero Ref when it does not parse, as the runtime would refuse it
		refs[i] = image.Running(c.RunningDigest)
		if j, ok := byRef[refs[i]]; ok {
			counts[j]++
			continue
		}
		byRef[refs[i]] = len(out)
		out = append(out, types.Target{Ref: refs[i]})
		counts = append(counts, 1)
	}
	// Each target's uses in one slice of their number: a watcher's walk
	// holds one use of every pod here.
	for j := range out {
		out[j].Uses = make([]types.Use, 0, counts[j])
	}
	for i, c := range inv.Containers {
		if refs[i] == "" {
			continue
		}
		use := useOf(c)
		usePlatforms(inv, c, &use)
		j := byRef[refs[i]]
		out[j].Uses = append(out[j].Uses, use)
	}
	return out
}

// Check scans every image the inventory's containers use, then adds what
// only a cluster shows: drift between the running digest and the tag (high
// where the next start pulls), running digests the registry no longer has
// (naming the nodes that still hold them), pull-always on a tag, and pinned
// digests no tag reaches, each of which makes the image at-risk; and, as
// info that leaves an image ok, a reference by tag. A piece lost for a
// platform is judged for the nodes each use may run on (see narrowToNodes),
// and so is a reference that names a single platform's manifest (see
// platformPin).
// The scanner's cache is shared between the two walks.
func Check(ctx context.Context, s *scan.Scanner, inv *inventory.Inventory) (*types.Result, error) {
	res, err := s.Run(ctx, Targets(inv))
	if err != nil {
		return res, err
	}
	for _, im := range res.Images {
		narrowToNodes(im)
		if err := platformPin(ctx, s, im); err != nil {
			return res, err
		}
	}

	// Walk every running digest: what a rollback, or a node without the
	// image, needs. A digest the tag walk fetched comes from the cache.
	walked := map[useKey]*types.Image{}
	if running := RunningTargets(inv); len(running) > 0 {
		rres, err := s.Run(ctx, running)
		if err != nil {
			return res, err
		}
		for _, im := range rres.Images {
			narrowToNodes(im)
			for _, u := range im.Uses {
				walked[keyOf(u)] = im
			}
		}
		res.Running = runningVerdicts(s, running, rres)
		res.Duration += rres.Duration
		res.Reasked += rres.Reasked
		res.Recovered += rres.Recovered
	}

	for _, im := range res.Images {
		if err := annotate(ctx, s, inv, im, walked); err != nil {
			return res, err
		}
		im.UpdateVerdict()
	}
	res.Requests = s.Requests()
	return res, nil
}

// runningVerdicts are the verdicts of the running targets' walk, by each
// target's reference as given (the scanner names an image by its
// normalized reference).
func runningVerdicts(s *scan.Scanner, running []types.Target, rres *types.Result) map[string]types.Verdict {
	byRef := make(map[string]types.Verdict, len(rres.Images))
	for _, im := range rres.Images {
		byRef[im.Reference] = im.Verdict
	}
	out := make(map[string]types.Verdict, len(running))
	for _, t := range running {
		if n, _, err := s.Parse(t.Ref); err == nil {
			if v, ok := byRef[n]; ok {
				out[t.Ref] = v
			}
		}
	}
	return out
}

// annotate adds the cluster findings of one image: those of its uses (see
// annotateUses), then what its reference says (a tag, or a pin no tag
// reaches).
func annotate(ctx context.Context, s *scan.Scanner, inv *inventory.Inventory, im *types.Image, walked map[useKey]*types.Image) error {
	ref, _ := imageref.Parse(im.Reference)
	pinned := ref.Pinned()
	_, _, perr := s.Parse(im.Reference)
	parsed := perr == nil
	annotateUses(ctx, s, inv, im, ref, parsed, walked)
	if im.Verdict == types.Broken || im.Verdict == types.Unknown || !parsed {
		return nil // a reference that does not resolve says nothing about pins and tags
	}
	if !pinned {
		// Info alone: with the digest the tag names running, nothing above
		// found a risk, and the verdict stays ok.
		im.Findings = append(im.Findings, types.NewAdvisedFinding(types.MutableReference, "", "",
			fmt.Sprintf("%s is referenced by tag: a reschedule onto a node without the image pulls whatever the tag means then", im.Reference),
			"pin it as tag@digest (regcheck pin)"))
		return nil
	}
	tagged, err := s.Tagged(ctx, im.Reference)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Nothing to claim either way, but the check did not happen: say so.
		im.Findings = append(im.Findings, types.NewAdvisedFinding(types.RegistryFault, ref.Digest, "",
			fmt.Sprintf("could not check whether a tag still points at %s: %v", ref.Digest, err),
			"run again when the registry answers; a pin no tag reaches is deleted by a GC that deletes untagged manifests"))
		return nil
	}
	if !tagged {
		im.Findings = append(im.Findings, types.NewAdvisedFinding(types.PinnedDigestUntagged, ref.Digest, "",
			fmt.Sprintf("%s pins %s, which no tag points at: a registry GC that deletes untagged manifests will delete it", im.Reference, ref.Digest),
			"tag the digest in the registry (crane tag), or re-pin to a tagged digest"))
	}
	return nil
}

// annotateUses adds the findings of each use of im: pull-always on a tag,
// an image ID only, a running digest the registry lost, drift. One finding
// per workload container (or image volume) and digest, however many pods.
func annotateUses(ctx context.Context, s *scan.Scanner, inv *inventory.Inventory, im *types.Image, ref imageref.Ref, parsed bool, walked map[useKey]*types.Image) {
	pinned := ref.Pinned()
	seen := map[string]bool{}
	once := func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
	// Whether a running digest is a child of the index the tag gives, asked
	// once per digest: a digest thousands of pods run is one answer, not a
	// manifest read and parsed for each.
	children := map[string]bool{}
	child := func(d string) bool {
		is, ok := children[d]
		if !ok {
			is = childOf(ctx, s, ref.Repo+"@"+im.Digest, d)
			children[d] = is
		}
		return is
	}
	for _, u := range im.Uses {
		who, policy, start, runs := useName(u), "imagePullPolicy", "every container start runs", "runs"
		if u.Volume != "" {
			// The kubelet ensures a pod's image volumes, each with its
			// pullPolicy, whenever it starts one of its containers
			// (kuberuntime's SyncPod, getImageVolumes).
			policy, start, runs = "pullPolicy", "every container start mounts", "mounts"
		}
		if !pinned && u.PullPolicy == "Always" && once("policy "+who) {
			im.Findings = append(im.Findings, types.NewAdvisedFinding(types.PullAlwaysMutable, "", "",
				fmt.Sprintf("%s pulls %s with %s: Always: %s whatever the tag means that day", who, im.Reference, policy, start),
				fmt.Sprintf("pin the image by digest (regcheck pin) and use %s: IfNotPresent", policy)))
		}
		if u.RunningDigest == "" && u.ImageID != "" && once("image-id "+who) {
			im.Findings = append(im.Findings, types.NewAdvisedFinding(types.ImageIDOnly, "", "",
				fmt.Sprintf("%s: the runtime reports only %s, an image ID, not a registry digest: which digest runs, and whether it drifted, cannot be told", who, u.ImageID),
				"record it anyway (regcheck record); pin the workload by digest so that what runs is known"))
		}
		if u.RunningDigest == "" || !parsed || !once("running "+who+" "+u.RunningDigest) {
			continue
		}
		if old, ok := walked[keyOf(u)]; ok && u.RunningDigest != im.Digest && gone(old) {
			f := types.NewAdvisedFinding(types.RunningDigestMissing, u.RunningDigest, "",
				fmt.Sprintf("%s %s %s, which the registry no longer serves in full (%s); it lives only in the cache of %s",
					who, runs, u.RunningDigest, firstCode(old), nodesOf(inv, u.RunningDigest)),
				"record it now (regcheck record) and rebuild or re-push that digest before a reschedule, eviction or node image GC turns it into ImagePullBackOff")
			im.Findings = append(im.Findings, f)
		}
		if !pinned && im.Digest != "" && u.RunningDigest != im.Digest && !child(u.RunningDigest) {
			f := types.NewAdvisedFinding(types.Drift, im.Digest, "",
				fmt.Sprintf("%s %s %s, but %s now resolves to %s: the next pull runs other code", who, runs, u.RunningDigest, im.Reference, im.Digest),
				fmt.Sprintf("pin %s@%s to keep what runs, or roll out the new digest deliberately", im.Reference, u.RunningDigest))
			// High where the next container start pulls (an image
			// volume's too): Always (the effective policy, Kubernetes'
			// default for latest or no tag). With IfNotPresent the node
			// keeps what runs until a reschedule, as for any tag.
			if u.PullPolicy == "Always" {
				f.Severity = types.SeverityHigh
			}
			im.Findings = append(im.Findings, f)
		}
	}
}

// childOf reports whether digest is one of the children of index, the
// repo@digest an image resolved to: some runtimes (CRI-O) report the
// platform manifest they pulled, not the index. The index was fetched by
// the walk: this is a cache hit, not a request.
func childOf(ctx context.Context, s *scan.Scanner, index, digest string) bool {
	m, err := s.Manifest(ctx, index)
	if err != nil {
		return false
	}
	children, err := m.Children()
	if err != nil {
		return false
	}
	for _, c := range children {
		if c.Digest.String() == digest {
			return true
		}
	}
	return false
}

// gone reports whether a walk of a running digest found it broken in the
// registry (not merely unparseable).
func gone(im *types.Image) bool {
	if im.Verdict != types.Broken {
		return false
	}
	for _, f := range im.Findings {
		if f.Code == types.InvalidReference {
			return false
		}
	}
	return true
}

// useKey identifies one container's (or image volume's) use of one
// running digest.
type useKey struct{ namespace, kind, name, pod, container, volume, digest string }

func keyOf(u types.Use) useKey {
	return useKey{u.Namespace, u.Kind, u.Name, u.Pod, u.Container, u.Volume, u.RunningDigest}
}

// useName names a use's workload and its container or image volume:
// "Deployment prod/web container nginx", "Deployment prod/web volume models".
func useName(u types.Use) string {
	name := u.Kind + " " + u.Namespace + "/" + u.Name
	if u.Container != "" {
		name += " container " + u.Container
	}
	if u.Volume != "" {
		name += " volume " + u.Volume
	}
	return name
}

func firstCode(im *types.Image) string {
	for _, f := range im.Findings {
		if f.Severity >= types.SeverityCritical {
			return string(f.Code)
		}
	}
	return string(im.Verdict)
}

func nodesOf(inv *inventory.Inventory, digest string) string {
	nodes := inv.NodeImages[digest]
	if len(nodes) == 0 {
		return "the nodes that ran it (none reports it in status.images)"
	}
	return "node " + strings.Join(nodes, ", node ")
}
