//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// The fault tests put internal/testing/faultproxy between the real CLI and a real
// registry. The contract: only the registry's own 404 on a manifest or
// blob proves absence. Every other failure is a fault: the image is
// unknown with the fault's code, never broken, and the exit code is 3.
// A fault that passes (once, or on 30% of requests) must not change any
// verdict: what the scan says equals what it says with no proxy.

// outcome is what a scan says of one image: its verdict and the codes of
// its findings, facts and faults apart, each sorted.
type outcome struct {
	verdict types.Verdict
	facts   []types.Code
	faults  []types.Code
	detail  string // the findings' messages, for failure messages
}

func (o outcome) String() string {
	return fmt.Sprintf("%s facts=%v faults=%v", o.verdict, o.facts, o.faults)
}

func (o outcome) same(p outcome) bool {
	return o.verdict == p.verdict && slices.Equal(o.facts, p.facts) && slices.Equal(o.faults, p.faults)
}

func outcomeOf(im *types.Image) outcome {
	o := outcome{verdict: im.Verdict}
	var msgs []string
	for _, f := range im.Findings {
		if f.Code.Fault() {
			o.faults = append(o.faults, f.Code)
		} else {
			o.facts = append(o.facts, f.Code)
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s", f.Code, f.Message))
	}
	slices.Sort(o.facts)
	slices.Sort(o.faults)
	o.facts, o.faults = slices.Compact(o.facts), slices.Compact(o.faults)
	o.detail = strings.Join(msgs, "; ")
	return o
}

// reaskLog is the scan's log line after it asked again (at --log-level info).
var reaskLog = regexp.MustCompile(`INFO asked again images=(\d+) recovered=(\d+)`)

// scanned is what one scan said.
type scanned struct {
	exit      int
	images    map[string]outcome // by fixture name
	reasked   int                // images asked again after a pause, from the log
	recovered int                // of those, images that then got a verdict
}

// scanVia runs `regcheck scan -o json --timeout 2s` on every fixture, named
// on host, with a manifest cache of its own: every manifest is fetched, as
// the faults on fetching it need.
func scanVia(t *testing.T, host string, imgs []fixture.Image) scanned {
	t.Helper()
	args := []string{"--log-level", "info", "scan", "-o", "json", "--timeout", "2s", "--cache-dir", t.TempDir()}
	for _, fx := range imgs {
		args = append(args, fixture.Ref(host, "gc/", fx.Name, "v1"))
	}
	var out, errb bytes.Buffer
	// Bounded: a stalled request ends at --timeout; this bounds the lot.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	var doc report.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("exit %d, no JSON report: %v\n%s%s", code, err, out.String(), errb.String())
	}
	byRef := byReference(doc)
	got := map[string]outcome{}
	for _, fx := range imgs {
		im := byRef[fixture.Ref(host, "gc/", fx.Name, "v1")]
		if im == nil {
			t.Fatalf("the report has no %s:\n%s", fx.Name, out.String())
		}
		got[fx.Name] = outcomeOf(im)
	}
	res := scanned{exit: code, images: got}
	if m := reaskLog.FindStringSubmatch(errb.String()); m != nil {
		res.reasked, _ = strconv.Atoi(m[1])
		res.recovered, _ = strconv.Atoi(m[2])
	}
	return res
}

// truth scans the registry directly: what every case with a passing fault
// must say too.
func truth(t *testing.T, r *registry.Registry, imgs []fixture.Image) (int, map[string]outcome) {
	t.Helper()
	s := scanVia(t, r.Host(), imgs)
	for name, o := range s.images {
		if o.verdict == types.Unknown || len(o.faults) > 0 {
			t.Fatalf("with no proxy, %s is %s: the registry itself is faulty (%s)", name, o, o.detail)
		}
	}
	return s.exit, s.images
}

// faultCase is one fault kind put in front of the registry.
type faultCase struct {
	name  string
	rules []faultproxy.Rule
	auth  bool // the proxy asks for a Bearer token
	// otherIP is where redirects go: 127.0.0.2 (another host name) unless
	// set; 127.0.0.1 is the proxy's host on another port.
	otherIP string
	// What the scan must say. passes: the true outcome of every image
	// (a transient fault, a redirect). Else code: every affected image is
	// unknown with this fault code and no other ("" any fault code);
	// broken: every affected image is broken with this code.
	passes bool
	code   types.Code
	broken types.Code
	// affects limits a persistent fault to some fixtures (indexes); the
	// others keep their true outcome. nil: every fixture.
	affects func(fixture.Image) bool
	// redirects: the other host must have served requests, and none may
	// have carried Authorization or Cookie.
	redirects bool
}

func rule(f faultproxy.Fault, kinds ...faultproxy.Kind) faultproxy.Rule {
	return faultproxy.Rule{Fault: f, Kinds: kinds}
}

func once(f faultproxy.Fault, kinds ...faultproxy.Kind) faultproxy.Rule {
	return faultproxy.Rule{Fault: f, Kinds: kinds, First: 1}
}

func isIndex(fx fixture.Image) bool { return len(fx.Children) > 0 }

const (
	ping     = faultproxy.Ping
	token    = faultproxy.Token
	byTag    = faultproxy.ManifestByTag
	byDigest = faultproxy.ManifestByDigest
	blob     = faultproxy.Blob
)

// faultCases are the kinds of fault on an intact registry.
var faultCases = []faultCase{
	// Persistent faults: unknown, with the cause.
	{name: "ping 404", rules: []faultproxy.Rule{rule(faultproxy.NotFound, ping)}, code: types.PingFailed},
	{name: "token realm 404", auth: true, rules: []faultproxy.Rule{rule(faultproxy.NotFound, token)}, code: types.TokenFailed},
	{name: "short body always", rules: []faultproxy.Rule{rule(faultproxy.ShortBody, byDigest)}, code: types.BadResponse},
	{name: "tag serves a JSON page", rules: []faultproxy.Rule{rule(faultproxy.NotManifest, byTag)}, code: types.BadResponse},
	{name: "429 Retry-After on manifests", rules: []faultproxy.Rule{rule(faultproxy.TooManyRequestsRetryAfter, byDigest)}, code: types.RateLimited},
	{name: "429 on blobs", rules: []faultproxy.Rule{rule(faultproxy.TooManyRequests, blob)}, code: types.RateLimited},
	{name: "500 on tags", rules: []faultproxy.Rule{rule(faultproxy.InternalError, byTag)}, code: types.RegistryFault},
	{name: "502 on manifests", rules: []faultproxy.Rule{rule(faultproxy.BadGateway, byDigest)}, code: types.RegistryFault},
	{name: "503 on blobs", rules: []faultproxy.Rule{rule(faultproxy.Unavailable, blob)}, code: types.RegistryFault},
	{name: "reset on manifests", rules: []faultproxy.Rule{rule(faultproxy.Reset, byDigest)}, code: types.Unreachable},
	{name: "stall on tags", rules: []faultproxy.Rule{rule(faultproxy.Stall, byTag)}, code: types.Unreachable},
	{name: "manifest over 4 MiB", rules: []faultproxy.Rule{rule(faultproxy.Oversize, byDigest)}, code: types.LimitExceeded},
	{name: "index child digest empty", rules: []faultproxy.Rule{rule(faultproxy.IndexEmptyChild, byTag)}, code: types.BadResponse, affects: isIndex},
	{name: "index child digest invalid", rules: []faultproxy.Rule{rule(faultproxy.IndexInvalidChild, byTag)}, code: types.BadResponse, affects: isIndex},
	{name: "redirect loop on blobs", rules: []faultproxy.Rule{rule(faultproxy.RedirectLoop, blob)}, code: ""},
	// A 404 from a host the registry redirected to is not the registry's.
	{name: "blob 307 to a 404 page", rules: []faultproxy.Rule{rule(faultproxy.RedirectNotFound, blob)}, code: types.RegistryFault},
	{name: "manifest 307 to a 404 page", rules: []faultproxy.Rule{rule(faultproxy.RedirectNotFound, byDigest)}, code: types.RegistryFault},
	// Bytes that parse and always hash to another digest: a fact.
	{name: "wrong digest always", rules: []faultproxy.Rule{rule(faultproxy.WrongDigest, byDigest)}, broken: types.DigestMismatch},
	// Transient faults: the true verdict.
	{name: "short body once", rules: []faultproxy.Rule{once(faultproxy.ShortBody, byDigest)}, passes: true},
	{name: "wrong digest once", rules: []faultproxy.Rule{once(faultproxy.WrongDigest, byDigest)}, passes: true},
	{name: "JSON page once", rules: []faultproxy.Rule{once(faultproxy.NotManifest, byTag)}, passes: true},
	{name: "5xx on 30%", rules: []faultproxy.Rule{{Fault: faultproxy.ServerError, Percent: 30}}, passes: true},
	{name: "503 once", rules: []faultproxy.Rule{once(faultproxy.Unavailable)}, passes: true},
	{name: "429 Retry-After once", rules: []faultproxy.Rule{once(faultproxy.TooManyRequestsRetryAfter, byTag, byDigest, blob)}, passes: true},
	{name: "reset once", rules: []faultproxy.Rule{once(faultproxy.Reset)}, passes: true},
	{name: "stall once on tags", rules: []faultproxy.Rule{once(faultproxy.Stall, byTag)}, passes: true},
	// A registry that stalls for a moment: the first 3 manifest requests.
	// (A stall on the first request of every manifest would stall each
	// level of an index anew, and one re-ask gets one level further.)
	{name: "stall on 3 manifests", rules: []faultproxy.Rule{{Fault: faultproxy.Stall, Kinds: []faultproxy.Kind{byDigest}, Limit: 3}}, passes: true},
	// Redirects are followed, and keep no credentials to another host.
	{name: "blob 307 to another host", rules: []faultproxy.Rule{rule(faultproxy.Redirect307, blob)}, passes: true, redirects: true},
	{name: "manifest 301", rules: []faultproxy.Rule{rule(faultproxy.Redirect301, byDigest)}, passes: true, redirects: true},
	{name: "manifest 302", rules: []faultproxy.Rule{rule(faultproxy.Redirect302, byDigest)}, passes: true, redirects: true},
	{name: "manifest 303", rules: []faultproxy.Rule{rule(faultproxy.Redirect303, byDigest)}, passes: true, redirects: true},
	{name: "manifest 308", rules: []faultproxy.Rule{rule(faultproxy.Redirect308, byDigest)}, passes: true, redirects: true},
	{name: "token auth, 307 to another host", auth: true, rules: []faultproxy.Rule{rule(faultproxy.Redirect307, blob, byDigest)}, passes: true, redirects: true},
	{name: "token auth, 307 to another port", auth: true, otherIP: "127.0.0.1", rules: []faultproxy.Rule{rule(faultproxy.Redirect307, blob, byDigest)}, passes: true, redirects: true},
}

// figures are what one case measured, for the closing note.
type figures struct {
	name        string
	injected    map[faultproxy.Fault]int
	affected    int // images a fault was injected into
	recovered   int // of those, images whose outcome is the true one
	falseBroken int // images broken that are not broken with no proxy (nor by the case's own fact)
	exit        int
	verdicts    map[types.Verdict]int
	codes       map[types.Code]int // images with a finding of each code
	// reasked and reaskRecovered: images asked again after a pause, and
	// those of them that then got a verdict (the rest of recovered passed
	// on a retry within the request).
	reasked, reaskRecovered int
}

// runFaultCase scans the fixtures through a proxy with tc's rules and
// checks every image against the true outcomes in want.
func runFaultCase(t *testing.T, r *registry.Registry, imgs []fixture.Image, tc faultCase, wantExit int, want map[string]outcome) figures {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Config{Upstream: r.Host(), Rules: tc.rules, Auth: tc.auth, Seed: 11, StallFor: 4 * time.Second, OtherIP: tc.otherIP})
	if err != nil {
		t.Fatal(err)
	}
	res := scanVia(t, p.Host(), imgs)
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	code, got := res.exit, res.images
	fig := figures{name: tc.name, injected: p.Injected(), exit: code, verdicts: map[types.Verdict]int{}, codes: map[types.Code]int{},
		reasked: res.reasked, reaskRecovered: res.recovered}
	byRepo := p.InjectedByRepo()

	// A fault on the ping or the token is no repository's: it hits every image.
	attributed := 0
	for _, n := range byRepo {
		attributed += n
	}
	everyImage := attributed < p.Total()

	expectExit := wantExit
	anyAffected := false
	for _, fx := range imgs {
		g, truth := got[fx.Name], want[fx.Name]
		fig.verdicts[g.verdict]++
		for _, c := range append(slices.Clone(g.facts), g.faults...) {
			fig.codes[c]++
		}
		hit := everyImage || byRepo["gc/"+fx.Name] > 0
		if hit {
			fig.affected++
			if g.same(truth) {
				fig.recovered++
			}
		}
		if g.verdict == types.Broken && truth.verdict != types.Broken && tc.broken == "" {
			fig.falseBroken++
		}
		affected := !tc.passes && (tc.affects == nil || tc.affects(fx))
		anyAffected = anyAffected || affected
		switch {
		case !affected:
			if !g.same(truth) {
				t.Errorf("%s: %s, want %s as with no proxy (%s)", fx.Name, g, truth, g.detail)
			}
		case tc.broken != "":
			if g.verdict != types.Broken || !slices.Contains(g.facts, tc.broken) {
				t.Errorf("%s: %s, want broken with %s (%s)", fx.Name, g, tc.broken, g.detail)
			}
		default:
			wantFaults := []types.Code{tc.code}
			switch {
			case g.verdict != types.Unknown:
				t.Errorf("%s: %s, want unknown with %s (%s)", fx.Name, g, tc.code, g.detail)
			case tc.code != "" && !slices.Equal(g.faults, wantFaults):
				t.Errorf("%s: fault codes %v, want only %s (%s)", fx.Name, g.faults, tc.code, g.detail)
			case len(g.facts) > 0:
				t.Errorf("%s: a fault reported as facts %v (%s)", fx.Name, g.facts, g.detail)
			}
		}
	}
	switch {
	case tc.broken != "":
		expectExit = cli.ExitFindings
	case anyAffected && wantExit == cli.ExitClean:
		expectExit = cli.ExitIncomplete
	}
	if code != expectExit {
		t.Errorf("exit %d, want %d", code, expectExit)
	}
	if fig.falseBroken > 0 {
		t.Errorf("%d images falsely broken", fig.falseBroken)
	}
	if p.Total() == 0 {
		t.Errorf("the proxy injected nothing: the case tests nothing")
	}
	if tc.redirects {
		v := p.Visits()
		if v.Requests == 0 {
			t.Errorf("the other host served nothing: the redirects were not followed")
		}
		if v.Authorization > 0 || v.Cookie > 0 {
			t.Errorf("the other host received Authorization on %d and Cookie on %d of %d requests", v.Authorization, v.Cookie, v.Requests)
		}
	}
	return fig
}

// logFigures prints the figures of every case as a table.
func logFigures(t *testing.T, title string, figs []figures) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%-34s %8s %8s %9s %9s %12s %4s  %s\n", title, "case", "injected", "affected", "recovered", "re-asked", "false-broken", "exit", "verdicts / codes / faults injected")
	total, falseBroken, recovered, reasked := 0, 0, 0, 0
	for _, f := range figs {
		n := 0
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(f.injected)) {
			n += f.injected[k]
			parts = append(parts, fmt.Sprintf("%s×%d", k, f.injected[k]))
		}
		var vs, cs []string
		for _, v := range slices.Sorted(maps.Keys(f.verdicts)) {
			vs = append(vs, fmt.Sprintf("%s %d", v, f.verdicts[v]))
		}
		for _, c := range slices.Sorted(maps.Keys(f.codes)) {
			cs = append(cs, fmt.Sprintf("%s %d", c, f.codes[c]))
		}
		if len(cs) == 0 {
			cs = []string{"none"}
		}
		total, falseBroken, recovered, reasked = total+n, falseBroken+f.falseBroken, recovered+f.recovered, reasked+f.reaskRecovered
		fmt.Fprintf(&b, "%-34s %8d %8d %9d %9s %12d %4d  %s / %s / %s\n", f.name, n, f.affected, f.recovered,
			fmt.Sprintf("%d→%d", f.reasked, f.reaskRecovered), f.falseBroken, f.exit,
			strings.Join(vs, ", "), strings.Join(cs, ", "), strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "%-34s %8d %8s %9d %9s %12d\n", "total", total, "", recovered, fmt.Sprintf("→%d", reasked), falseBroken)
	b.WriteString("recovered: images a fault was injected into whose outcome is the true one; re-asked: images asked again → of those, given a verdict")
	t.Log(b.String())
}

// TestFaults: every fault kind in front of an intact distribution 3.x.
func TestFaults(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	wantExit, want := truth(t, r, imgs)
	var figs []figures
	for _, tc := range faultCases {
		t.Run(tc.name, func(t *testing.T) {
			figs = append(figs, runFaultCase(t, r, imgs, tc, wantExit, want))
		})
	}
	logFigures(t, "fault injection on an intact registry (distribution v3.1.2):", figs)
}

// TestFaultsAfterGC: after docker/distribution 2.8.3's GC has deleted the
// untagged children, passing faults change nothing: the truly broken
// images stay broken with child-missing, the intact ones stay ok.
func TestFaultsAfterGC(t *testing.T) {
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	wantExit, want := truth(t, r, imgs)
	broken := 0
	for _, fx := range imgs {
		if o := want[fx.Name]; o.verdict == types.Broken {
			broken++
			if !slices.Contains(o.facts, types.ChildMissing) {
				t.Fatalf("%s after GC: %s, want child-missing", fx.Name, o)
			}
		}
	}
	if broken == 0 || broken == len(imgs) {
		t.Fatalf("after GC %d of %d broken: the fixture does not separate broken from intact", broken, len(imgs))
	}
	var figs []figures
	for _, tc := range faultCases {
		if !tc.passes || tc.redirects {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			figs = append(figs, runFaultCase(t, r, imgs, tc, wantExit, want))
		})
	}
	logFigures(t, "passing faults after docker/distribution 2.8.3 GC:", figs)
}

// TestFaultPin: pin neither refuses a reference as broken nor pins it
// because of a fault: it leaves it as is or says the tree is unverified,
// and exits 3.
func TestFaultPin(t *testing.T) {
	r, _ := startRegistry(t, registry.V3)
	for _, tc := range []struct {
		name      string
		image     string
		rules     []faultproxy.Rule
		unchanged bool // the reference cannot be resolved: the file must stay as is
	}{
		{"503 on the tag", "single", []faultproxy.Rule{rule(faultproxy.Unavailable, byTag)}, true},
		{"tag serves a JSON page", "single", []faultproxy.Rule{rule(faultproxy.NotManifest, byTag)}, true},
		{"503 on blobs", "single", []faultproxy.Rule{rule(faultproxy.Unavailable, blob)}, false},
		{"index child digest empty", "multiarch", []faultproxy.Rule{rule(faultproxy.IndexEmptyChild, byTag)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := faultproxy.Start(faultproxy.Config{Upstream: r.Host(), Rules: tc.rules})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ref := fixture.Ref(p.Host(), "gc/", tc.image, "v1")
			text := deployment("app", ref, "")
			file := writeFile(t, t.TempDir(), "app.yaml", text)
			code, out, errs := runCLI(t, "pin", "--write", "--timeout", "2s", file)
			if code != cli.ExitIncomplete {
				t.Errorf("exit %d, want 3\n%s%s", code, out, errs)
			}
			if strings.Contains(errs, ": broken:") || strings.Contains(errs, "refusing to pin") {
				t.Errorf("a fault made pin refuse the image as broken:\n%s", errs)
			}
			if !strings.Contains(errs, filepath.Base(file)+":10: unresolved:") && !strings.Contains(errs, filepath.Base(file)+":10: unverified:") {
				t.Errorf("stderr says neither unresolved nor unverified at %s:10:\n%s", file, errs)
			}
			if tc.unchanged && readFile(t, file) != text {
				t.Errorf("pinned an unresolved reference:\n%s", readFile(t, file))
			}
			if p.Total() == 0 {
				t.Error("the proxy injected nothing")
			}
			for _, line := range strings.Split(errs, "\n") {
				if strings.Contains(line, filepath.Base(file)+":10: ") {
					t.Logf("exit %d: %s", code, line[strings.Index(line, ":10: ")+5:])
				}
			}
		})
	}
}
