package pullpath

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// k3sCertsDir is where k3s writes its hosts directory; relative certificate
// paths in registries.yaml end up relative to a host directory under it.
const k3sCertsDir = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"

// k3sRegistry is registries.yaml as rancher/wharfie's registries.Registry
// reads it: with yaml.v2, the parser k3s uses, so YAML 1.1 values and
// errors match; unknown keys are ignored.
type k3sRegistry struct {
	Mirrors map[string]k3sMirror    `yaml:"mirrors"`
	Configs map[string]k3sRegConfig `yaml:"configs"`
}

type k3sMirror struct {
	Endpoints []string          `yaml:"endpoint"`
	Rewrites  map[string]string `yaml:"rewrite"`
}

type k3sRegConfig struct {
	Auth *k3sAuth `yaml:"auth"`
	TLS  *k3sTLS  `yaml:"tls"`
}

type k3sAuth struct {
	Username      string `yaml:"username"`
	Password      string `yaml:"password"`
	Auth          string `yaml:"auth"`
	IdentityToken string `yaml:"identity_token"`
}

type k3sTLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// k3sEndpoint is k3s's templates.RegistryEndpoint.
type k3sEndpoint struct {
	url      *url.URL
	override bool
	rewrites map[string]string
	config   k3sRegConfig
	line     int
}

// k3sHost is k3s's templates.HostConfig: one hosts.toml.
type k3sHost struct {
	def       *k3sEndpoint // nil: no server line
	endpoints []k3sEndpoint
	line      int    // of the mirrors or configs key
	capped    capped // endpoints past MaxMirrors, not rendered
}

// k3sConfig is a registries.yaml and the hosts directory k3s writes for it.
type k3sConfig struct {
	path  string
	reg   k3sRegistry
	hosts map[string]*k3sHost // by registry key, "_default" for "*"
}

// yamlLines records where each mirror, endpoint and config is in the file.
type yamlLines struct {
	mirror    map[string]int
	endpoints map[string][]int
	config    map[string]int
}

func loadK3s(path string, data []byte, o options) (*Config, error) {
	var reg k3sRegistry
	if err := yamlv2.Unmarshal(data, &reg); err != nil {
		return nil, &ParseError{Path: path, Line: yamlErrLine(err), Err: err}
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc) // only for line numbers; yaml.v2 has judged the file
	k := &k3sConfig{path: path, reg: reg}
	k.hosts = hostConfigs(reg, linesOf(&doc), o.noDefault)
	d, err := k.hostsDir()
	if err != nil {
		return nil, err
	}
	return &Config{format: FormatK3s, path: path, hosts: d, k3s: k}, nil
}

func linesOf(doc *yaml.Node) yamlLines {
	l := yamlLines{mirror: map[string]int{}, endpoints: map[string][]int{}, config: map[string]int{}}
	root := docRoot(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return l
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		section, body := root.Content[i].Value, root.Content[i+1]
		if body.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(body.Content); j += 2 {
			host, val := body.Content[j].Value, body.Content[j+1]
			switch section {
			case "configs":
				l.config[host] = body.Content[j].Line
			case "mirrors":
				l.mirror[host] = body.Content[j].Line
				l.endpoints[host] = endpointLines(val)
			}
		}
	}
	return l
}

func endpointLines(mirror *yaml.Node) []int {
	if mirror.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(mirror.Content); i += 2 {
		if mirror.Content[i].Value == "endpoint" {
			var lines []int
			for _, n := range mirror.Content[i+1].Content {
				lines = append(lines, n.Line)
			}
			return lines
		}
	}
	return nil
}

// hostsDir renders each host's hosts.toml and reads it back with k3s's
// containerd rules, so Endpoints answers from exactly what the node reads.
func (k *k3sConfig) hostsDir() (*hostsDir, error) {
	d := &hostsDir{root: k3sCertsDir, dirs: map[string]*hostsFile{}}
	for _, host := range k.sortedHosts() {
		h := k.hosts[host]
		name := hostDirectory(host)
		dir := filepath.Join(k3sCertsDir, name)
		f, err := parseHostsFile(filepath.Join(dir, "hosts.toml"), dir, renderHostsTOML(h), true)
		if err != nil {
			return nil, fmt.Errorf("translating %s for %s: %w", k.path, host, err)
		}
		f.path, f.capped = k.path, h.capped
		for i := range f.hosts {
			switch {
			case !f.hosts[i].root:
				f.hosts[i].line = h.endpoints[i].line
			case h.def != nil && h.def.line > 0:
				f.hosts[i].line = h.def.line
			default:
				f.hosts[i].line = h.line
			}
		}
		d.dirs[name] = f
	}
	return d, nil
}

func (k *k3sConfig) sortedHosts() []string {
	hosts := make([]string, 0, len(k.hosts))
	for h := range k.hosts {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}

// annotate adds the credentials k3s puts in containerd's CRI config: keyed
// by the endpoint's host, with docker.io and registry-1.docker.io taken as
// one (configForHost in pkg/agent/containerd/config.go).
func (k *k3sConfig) annotate(eps []Endpoint) {
	for i := range eps {
		host := eps[i].URL.Host
		if host == "registry-1.docker.io" {
			host = "docker.io"
		}
		if c := configForHost(k.reg.Configs, host); c.Auth != nil {
			a := Auth(*c.Auth)
			eps[i].Auth = &a
		}
	}
}

// configForHost prefers registry-1.docker.io's entry for docker.io, then
// the host's own.
func configForHost(configs map[string]k3sRegConfig, host string) k3sRegConfig {
	if h := defaultHost(host); h != host {
		if c, ok := configs[h]; ok {
			return c
		}
	}
	return configs[host]
}

// defaultHost is containerd's docker.DefaultHost.
func defaultHost(host string) string {
	if host == "docker.io" {
		return "registry-1.docker.io"
	}
	return host
}

// normalizeEndpoint is k3s's normalizeEndpointAddress: https unless the
// endpoint says otherwise or is localhost on a port other than 443; docker.io
// becomes registry-1.docker.io; a path other than "", "/" or "/v2" is kept
// and marked override_path. It returns the endpoint's registry name for
// configs lookups.
func normalizeEndpoint(endpoint string) (string, *url.URL, bool, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "//" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", nil, false, err
	}
	if u.Scheme == "" {
		u.Scheme = "https"
		if port := u.Port(); isLocalhost(u.Host) && port != "" && port != "443" {
			u.Scheme = "http"
		}
	}
	registry := u.Host
	u.Host = defaultHost(registry)
	if u.Host == "registry-1.docker.io" {
		registry = "docker.io"
	}
	switch u.Path {
	case "", "/", "/v2":
		u.Path = "/v2"
		return registry, u, false, nil
	}
	return registry, u, true, nil
}
