package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"

	"github.com/regcheck/regcheck/types"
)

// apiSeed is an in-memory registry holding the fixtures, a pin whose tag
// moved (gc/retag), a push by digest only (gc/single) and, in gc/notags,
// a repository whose tags the registry does not know.
type apiSeed struct {
	host                       string
	imgs                       []fixture.Image
	retagOld, byDigest, notags string
	mu                         sync.Mutex
	// block answers these paths with a status instead of the registry.
	block map[string]int
}

func (s *apiSeed) blockPath(path string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.block[path] = code
}

func seedAPI(t *testing.T) *apiSeed {
	t.Helper()
	s := &apiSeed{block: map[string]int{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		code, ok := s.block[r.URL.Path]
		s.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"blocked by the test"}]}`)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.host = strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	var err error
	if s.imgs, err = fixture.Push(ctx, s.host, "gc/"); err != nil {
		t.Fatal(err)
	}
	s.retagOld = apiPush(t, s.host+"/gc/retag:v1", "retag first build")
	apiPush(t, s.host+"/gc/retag:v1", "retag second build")
	s.byDigest = apiPush(t, s.host+"/gc/single@", "pushed by digest only")
	s.notags = apiPush(t, s.host+"/gc/notags@", "never tagged")
	return s
}

func apiPush(t *testing.T, ref, content string) string {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, ggcrtypes.DockerManifestSchema2), static.NewLayer([]byte(content), ggcrtypes.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if strings.HasSuffix(ref, "@") {
		ref += d.String()
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithTransport(http.DefaultTransport)); err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func (s *apiSeed) targets(skip ...string) []types.Target {
	var out []types.Target
	for _, im := range s.imgs {
		if !slices.Contains(skip, im.Name) {
			out = append(out, types.Target{Ref: im.Ref, Uses: []types.Use{{Source: "args"}}})
		}
	}
	for _, ref := range []string{s.host + "/gc/retag:v1", s.host + "/gc/retag@" + s.retagOld, s.host + "/gc/single@" + s.byDigest} {
		out = append(out, types.Target{Ref: ref, Uses: []types.Use{{Source: "args"}}})
	}
	return out
}

// lostBy maps each would-break reference to the digests it loses.
func lostBy(es []gcresult.Entry) map[string]string {
	out := map[string]string{}
	for _, e := range es {
		out[e.Reference] = strings.Join(e.Lost, ",")
	}
	return out
}

func deletedSet(r *gcresult.Report) []string {
	var out []string
	for _, rd := range r.WouldDelete.Repositories {
		for _, m := range rd.Manifests {
			out = append(out, rd.Repository+"@"+m.Digest)
		}
	}
	sort.Strings(out)
	return out
}

func TestCheckAPI(t *testing.T) {
	t.Parallel()
	s := seedAPI(t)
	// The fixtures' untagged children: what 2.8 takes from under their indexes.
	want28, del28 := map[string]string{}, []string{}
	for _, im := range s.imgs {
		var ds []string
		for _, c := range im.UntaggedChildren() {
			ds = append(ds, c.Digest.String())
			del28 = append(del28, s.host+"/gc/"+im.Name+"@"+c.Digest.String())
		}
		sort.Strings(ds)
		if len(ds) > 0 {
			want28[im.Ref] = strings.Join(ds, ",")
		}
	}
	pins := map[string]string{
		s.host + "/gc/retag@" + s.retagOld:  s.retagOld,
		s.host + "/gc/single@" + s.byDigest: s.byDigest,
	}
	for ref, d := range pins {
		want28[ref] = d
		del28 = append(del28, ref)
	}
	sort.Strings(del28)
	var del3 []string
	for ref := range pins {
		del3 = append(del3, ref)
	}
	sort.Strings(del3)
	// gc/notags is pinned; the registry does not know its tags.
	s.blockPath("/v2/gc/notags/tags/list", http.StatusNotFound)

	for _, tc := range []struct {
		name      string
		model     gcresult.Model
		du        bool
		wantBreak map[string]string
		wantDel   []string
		wantAbort bool
	}{
		{"2.8 delete-untagged aborts at the tagless repository", gcresult.Distribution28, true, map[string]string{}, nil, true},
		{"3 delete-untagged", gcresult.Distribution3, true, pins, del3, false},
		{"2.8 without delete-untagged", gcresult.Distribution28, false, map[string]string{}, nil, false},
		{"3 without delete-untagged", gcresult.Distribution3, false, map[string]string{}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scan.New()
			if err != nil {
				t.Fatal(err)
			}
			ts := append(s.targets(), types.Target{Ref: s.host + "/gc/notags@" + s.notags})
			rep, err := CheckAPI(context.Background(), sc, Options{Model: tc.model, DeleteUntagged: tc.du, AllRepositories: true}, ts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.model == gcresult.Distribution3 && tc.du {
				// 3.x skips the tagless repository and deletes its data.
				tc.wantBreak = withEntry(tc.wantBreak, s.host+"/gc/notags@"+s.notags, s.notags)
				tc.wantDel = append(slices.Clone(tc.wantDel), s.host+"/gc/notags@"+s.notags)
				sort.Strings(tc.wantDel)
			}
			if (rep.Abort != nil) != tc.wantAbort {
				t.Fatalf("abort %+v, want %t", rep.Abort, tc.wantAbort)
			}
			if tc.wantAbort && rep.Abort.Repository != "gc/notags" {
				t.Errorf("abort at %s, want gc/notags", rep.Abort.Repository)
			}
			if got := lostBy(rep.WouldBreak); !equalMaps(got, tc.wantBreak) {
				t.Errorf("would break:\n got %v\nwant %v", got, tc.wantBreak)
			}
			if got := deletedSet(rep); !slices.Equal(got, tc.wantDel) {
				t.Errorf("would delete:\n got %v\nwant %v", got, tc.wantDel)
			}
			if len(rep.AlreadyBroken) != 0 || rep.Mode != gcresult.ModeAPI || rep.Counts.Manifests != len(tc.wantDel) {
				t.Errorf("already broken %v, mode %q, counts %+v", rep.AlreadyBroken, rep.Mode, rep.Counts)
			}
			if !tc.du && !slices.Contains(rep.Notes, gcresult.Note{Text: noteNoDelete}) || !slices.Contains(rep.Notes, gcresult.Note{Kind: gcresult.NoteBlobs, Text: noteBlobs}) {
				t.Errorf("notes: %q", rep.Notes)
			}
		})
	}

	t.Run("2.8 delete-untagged breaks the indexes' children", func(t *testing.T) {
		sc, _ := scan.New()
		rep, err := CheckAPI(context.Background(), sc, Options{Model: gcresult.Distribution28, DeleteUntagged: true}, s.targets())
		if err != nil {
			t.Fatal(err)
		}
		if got := lostBy(rep.WouldBreak); !equalMaps(got, want28) {
			t.Errorf("would break:\n got %v\nwant %v", got, want28)
		}
		if got := deletedSet(rep); !slices.Equal(got, del28) {
			t.Errorf("would delete:\n got %v\nwant %v", got, del28)
		}
		for _, e := range rep.WouldBreak {
			if e.Verdict != types.Broken || !strings.Contains(e.Advice, "distribution 3") {
				t.Errorf("%s: verdict %s, advice %q", e.Reference, e.Verdict, e.Advice)
			}
		}
		// What the table prints (report.GCCheck, tested there) comes from
		// these fields.
		if !slices.Contains(rep.Registries, s.host) || !slices.ContainsFunc(rep.Notes, func(n gcresult.Note) bool {
			return n.Kind == gcresult.NoteBlobs && strings.Contains(n.Text, "storage mode")
		}) {
			t.Errorf("registries %v, notes %q", rep.Registries, rep.Notes)
		}
		if !slices.ContainsFunc(rep.WouldBreak, func(e gcresult.Entry) bool { return strings.Contains(e.Reason, "child manifest linux/arm64") }) {
			t.Errorf("no reason names the arm64 child: %+v", rep.WouldBreak)
		}
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(js, &back); err != nil || back["mode"] != "api" {
			t.Errorf("json mode %v (%v)", back["mode"], err)
		}
	})
}

func withEntry(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Under distribution 3 a tag in any repository keeps a manifest: with only
// the in-use repositories examined, a pin no examined tag reaches is
// undecided, never claimed lost.
func TestCheckAPIDistribution3Undecided(t *testing.T) {
	t.Parallel()
	s := seedAPI(t)
	sc, _ := scan.New()
	rep, err := CheckAPI(context.Background(), sc, Options{Model: gcresult.Distribution3, DeleteUntagged: true}, s.targets())
	var ue *UndecidedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), ue.Repository+"@"+ue.Digest+": undecided") {
		t.Fatalf("error %v, want the undecided pins named", err)
	}
	if rep == nil || len(rep.WouldBreak) != 0 {
		t.Fatalf("would break %+v, want nothing claimed", rep)
	}
	if !slices.ContainsFunc(rep.Notes, func(n gcresult.Note) bool {
		return n.Kind == gcresult.NoteUndecided && strings.HasPrefix(n.Text, ue.Repository+"@"+ue.Digest+": ")
	}) {
		t.Errorf("notes %q, want %s@%s noted undecided", rep.Notes, ue.Repository, ue.Digest)
	}
}

// The catalog brings in repositories nobody uses; without it only the
// in-use ones are examined, and the report says so.
func TestCheckAPICatalog(t *testing.T) {
	t.Parallel()
	s := seedAPI(t)
	var multi fixture.Image
	for _, im := range s.imgs {
		if im.Name == "multiarch" {
			multi = im
		}
	}
	child := s.host + "/gc/multiarch@" + multi.Children[0].Digest.String()
	for _, tc := range []struct {
		name         string
		all, blocked bool
		listed       bool
		note         string
		kind         gcresult.NoteKind
	}{
		{"in-use repositories only (default)", false, false, false, "only the repositories of in-use images", gcresult.NoteInUseOnly},
		{"all repositories", true, false, true, "", ""},
		{"all repositories, catalog blocked", true, true, false, "does not list its repositories", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.blocked {
				s.blockPath("/v2/_catalog", http.StatusUnauthorized)
			}
			sc, _ := scan.New()
			rep, err := CheckAPI(context.Background(), sc, Options{Model: gcresult.Distribution28, DeleteUntagged: true, AllRepositories: tc.all}, s.targets("multiarch"))
			if (err != nil) != tc.blocked {
				t.Fatalf("error %v; a catalog asked for and refused makes the run incomplete, nothing else", err)
			}
			var ce *CatalogError
			if tc.blocked && (!errors.As(err, &ce) || ce.Host != s.host || !errors.Is(err, types.ErrUnauthorized)) {
				t.Errorf("error %v, want a CatalogError of %s", err, s.host)
			}
			if got := slices.Contains(deletedSet(rep), child); got != tc.listed {
				t.Errorf("multiarch's child listed: %t, want %t", got, tc.listed)
			}
			noted := false
			for _, n := range rep.Notes {
				noted = noted || tc.note != "" && strings.Contains(n.Text, tc.note) && n.Kind == tc.kind
			}
			if noted != (tc.note != "") {
				t.Errorf("notes %q, want one containing %q", rep.Notes, tc.note)
			}
			if _, ok := lostBy(rep.WouldBreak)[multi.Ref]; ok {
				t.Error("multiarch is not in use")
			}
		})
	}
}

// What is broken already is what the scan engine says, finding for finding.
func TestCheckAPIAlreadyBroken(t *testing.T) {
	t.Parallel()
	s := seedAPI(t)
	var multi fixture.Image
	for _, im := range s.imgs {
		if im.Name == "multiarch" {
			multi = im
		}
	}
	gone := multi.Children[1].Digest.String()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+s.host+"/v2/gc/multiarch/manifests/"+gone, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s: %v %v", gone, err, resp)
	}
	sc, _ := scan.New()
	rep, err := CheckAPI(context.Background(), sc, Options{Model: gcresult.Distribution28, DeleteUntagged: true}, s.targets())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.AlreadyBroken) != 1 || rep.AlreadyBroken[0].Reference != multi.Ref || rep.AlreadyBroken[0].Losses[0].Code != types.ChildMissing ||
		rep.AlreadyBroken[0].Lost[0] != gone || rep.AlreadyBroken[0].Verdict != types.Broken {
		t.Fatalf("already broken: %+v", rep.AlreadyBroken)
	}
	// The run still takes the other child; the gone one is not the run's.
	if got := lostBy(rep.WouldBreak)[multi.Ref]; got != multi.Children[0].Digest.String() {
		t.Errorf("multiarch would lose %q", got)
	}
	if slices.Contains(deletedSet(rep), s.host+"/gc/multiarch@"+gone) {
		t.Error("a manifest already gone is listed as deleted")
	}
}

// An unreachable registry makes the report incomplete, not wrong.
func TestCheckAPIUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	sc, _ := scan.New(scan.WithRetry(1, 1))
	rep, err := CheckAPI(context.Background(), sc, Options{Model: gcresult.Distribution28, DeleteUntagged: true}, []types.Target{{Ref: host + "/app:v1"}})
	if err == nil || rep == nil || len(rep.Skipped) == 0 || len(rep.WouldBreak)+len(rep.AlreadyBroken) != 0 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
}

func TestCatalogPages(t *testing.T) {
	t.Parallel()
	pages := map[string]string{"": "a,b", "b": "c", "c": ""}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		last := r.URL.Query().Get("last")
		repos := strings.Split(pages[last], ",")
		if pages[last] == "" {
			repos = []string{}
		} else {
			w.Header().Set("Link", fmt.Sprintf(`</v2/_catalog?last=%s&n=2>; rel="next"`, repos[len(repos)-1]))
		}
		json.NewEncoder(w).Encode(map[string][]string{"repositories": repos})
	}))
	defer srv.Close()
	sc, _ := scan.New()
	got, err := sc.Catalog(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("catalog %v, %v", got, err)
	}
}
