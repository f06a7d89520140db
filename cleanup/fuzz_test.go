package cleanup

import (
	"testing"
	"time"
)

// fuzzRepo is the repository every cleanup that reads is run over: an
// index with two children and a signature, tagged and untagged versions.
func fuzzRepo() *Repository {
	return ghcrRepo(multiArch...)
}

// FuzzRead reads any file as a cleanup: it returns policies or an error,
// never panics, and every policy it returns names itself and runs over a
// repository without panicking (testdata/fuzz/FuzzRead holds issue 44's
// hostile inputs: 30 {a,b} groups, keep-n-most-recent -3, aliases, day
// counts past a Duration, 2,000 wildcards).
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"sinceImagePushed","countUnit":"days","countNumber":7},"action":{"type":"expire"}}]}`))
	f.Add([]byte(`{"enabled":true,"keep_n":1,"older_than":"7d","name_regex":".*"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := Read("fuzz.yml", data)
		if err != nil {
			return
		}
		for _, p := range ps {
			_ = p.Name()
			r := fuzzRepo()
			if p.Applies(r.Name) {
				_, _, _ = Runs(p, r, ghcrAt, 2)
			}
		}
	})
}

// FuzzReadState reads any file as a service's export: a State or an
// error, never a panic, and a State merges into a repository.
func FuzzReadState(f *testing.F) {
	f.Add([]byte(`{"imageDetails":[{"repositoryName":"a","imageDigest":"sha256:1","imagePushedAt":1793491200.5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadState("fuzz.json", data)
		if err != nil {
			return
		}
		s.Merge(fuzzRepo())
		for _, m := range s.Manifests {
			if !m.Pushed.IsZero() && m.Pushed.After(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)) {
				t.Fatalf("%s pushed at %v: out of range, accepted", m.Digest, m.Pushed)
			}
		}
	})
}
