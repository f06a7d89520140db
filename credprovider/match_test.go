package credprovider

import (
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func TestMatches(t *testing.T) {
	tests := []struct {
		pattern, image string
		want           bool
	}{
		{"*.dkr.ecr.*.amazonaws.com", "123456789012.dkr.ecr.us-east-1.amazonaws.com/app", true},
		{"*.dkr.ecr.*.amazonaws.com", "123456789012.dkr.ecr.us-east-1.amazonaws.com.cn/app", false}, // one label more
		{"*.azurecr.io", "team.azurecr.io/app", true},
		{"*.io", "team.azurecr.io/app", false}, // a glob is one label
		{"*.*.registry.io", "a.b.registry.io/x", true},
		{"k8s.*", "k8s.io/pause", true},
		{"app*.k8s.io", "apps.k8s.io/x", true},
		{"app*.k8s.io", "web.k8s.io/x", false},
		{"gcr.io", "gcr.io/project/app", true},
		{"gcr.io", "eu.gcr.io/project/app", false},
		{"gcr.io", "gcr.io:443/project/app", false}, // a port on one side only
		{"registry.io:8080/path", "registry.io:8080/path/app", true},
		{"registry.io:8080/path", "registry.io:8080/pathology", true}, // a string prefix, as in the kubelet
		{"registry.io:8080/path", "registry.io:8080/other", false},
		{"registry.io:8080/path", "registry.io:9090/path/app", false},
		{"registry.io:8080", "registry.io/app", false},
		{"127.0.0.1:5000", "127.0.0.1:5000/app", true},
		{"127.0.0.*:5000", "127.0.0.1:5000/app", true},
		{"docker.io", "docker.io/library/nginx", true},
		{"[a-", "a.io/x", false}, // a bad glob matches nothing
		{"a.io/%zz", "a.io/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.image, func(t *testing.T) {
			if got := matches(tt.pattern, tt.image); got != tt.want {
				t.Errorf("matches(%q, %q) = %v, want %v", tt.pattern, tt.image, got, tt.want)
			}
		})
	}
}

func TestKeyringOrder(t *testing.T) {
	type added struct {
		provider string
		keys     []string
	}
	tests := []struct {
		name  string
		add   []added
		image string
		want  []string // provider/pattern, best first
	}{
		{
			name:  "longer path first",
			add:   []added{{"p", []string{"quay.io", "quay.io/team", "quay.io/team/app"}}},
			image: "quay.io/team/app",
			want:  []string{"p/quay.io/team/app", "p/quay.io/team", "p/quay.io"},
		},
		{
			name:  "plain label before glob",
			add:   []added{{"p", []string{"*.example.com", "reg.example.com"}}},
			image: "reg.example.com/app",
			want:  []string{"p/reg.example.com", "p/*.example.com"},
		},
		{
			name:  "same key: earlier provider first",
			add:   []added{{"first", []string{"reg.io"}}, {"second", []string{"https://reg.io/v2/"}}},
			image: "reg.io/app",
			want:  []string{"first/reg.io", "second/https://reg.io/v2/"},
		},
		{
			name:  "more specific key of a later provider first",
			add:   []added{{"first", []string{"reg.io"}}, {"second", []string{"reg.io/team"}}},
			image: "reg.io/team/app",
			want:  []string{"second/reg.io/team", "first/reg.io"},
		},
		{
			name:  "non-matching keys left out",
			add:   []added{{"p", []string{"reg.io/other", "gcr.io", "reg.io"}}},
			image: "reg.io/team/app",
			want:  []string{"p/reg.io"},
		},
		{
			name:  "docker hub fallback",
			add:   []added{{"p", []string{"https://index.docker.io/v1/"}}},
			image: "docker.io/library/nginx",
			want:  []string{"p/https://index.docker.io/v1/"},
		},
		{
			name:  "no fallback off docker hub",
			add:   []added{{"p", []string{"index.docker.io"}}},
			image: "quay.io/app",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k keyring
			for _, a := range tt.add {
				auth := map[string]credentialproviderv1.AuthConfig{}
				for _, key := range a.keys {
					auth[key] = credentialproviderv1.AuthConfig{Username: "u", Password: "p"}
				}
				k.add(a.provider, auth)
			}
			var got []string
			for _, c := range k.lookup(tt.image) {
				got = append(got, c.Provider+"/"+c.Pattern)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("lookup(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestIsDockerHub(t *testing.T) {
	tests := map[string]bool{
		"nginx":                   true,
		"library/nginx":           true,
		"docker.io/library/nginx": true,
		"index.docker.io/x/y":     true,
		"quay.io/x":               false,
		"localhost:5000/x":        false,
		"":                        false,
	}
	for image, want := range tests {
		if got := isDockerHub(image); got != want {
			t.Errorf("isDockerHub(%q) = %v, want %v", image, got, want)
		}
	}
}

func TestImageOf(t *testing.T) {
	tests := []struct {
		ref  string
		kind string // repo, tag, digest, registry
		want string
	}{
		{"nginx", "repo", "docker.io/library/nginx"},
		{"index.docker.io/team/app", "repo", "docker.io/team/app"},
		{"127.0.0.1:5000/team/app", "repo", "127.0.0.1:5000/team/app"},
		{"127.0.0.1:5000/team/app:v1", "tag", "127.0.0.1:5000/team/app"},
		{"127.0.0.1:5000/app@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "digest", "127.0.0.1:5000/app"},
		{"127.0.0.1:5000", "registry", "127.0.0.1:5000"},
		{"index.docker.io", "registry", "docker.io"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			var r authn.Resource
			var err error
			switch tt.kind {
			case "repo":
				r, err = name.NewRepository(tt.ref)
			case "tag":
				r, err = name.NewTag(tt.ref)
			case "digest":
				r, err = name.NewDigest(tt.ref)
			case "registry":
				r, err = name.NewRegistry(tt.ref)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := imageOf(r); got != tt.want {
				t.Errorf("imageOf(%s) = %q, want %q", tt.ref, got, tt.want)
			}
		})
	}
}
