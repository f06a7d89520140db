package pullpath

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/internal/inputfile"
	"github.com/regcheck/regcheck/internal/redact"
)

// The formats Load tells apart, as Config.Format names them.
const (
	// FormatK3s is a k3s or RKE2 registries.yaml.
	FormatK3s = "k3s-registries.yaml"
	// FormatContainerd is a containerd hosts directory (config_path, such as
	// /etc/containerd/certs.d) or one hosts.toml in it.
	FormatContainerd = "containerd-hosts"
	// FormatRegistriesConf is a CRI-O / podman registries.conf (v2).
	FormatRegistriesConf = "registries.conf"
)

// Endpoint is one place the runtime asks for a piece of an image.
type Endpoint struct {
	// URL is the API root the runtime sends requests under: scheme, host
	// and path, such as https://mirror:5000/v2. With containerd's
	// override_path the path is used as given and need not end in /v2
	// (https://mirror/project/registry). Request URLs are
	// URL.Path + "/" + Repository + "/manifests/" + reference; see
	// ManifestURL and BlobURL.
	URL *url.URL
	// Repository is the repository to ask for at this endpoint, after
	// rewrites and prefix translation.
	Repository string
	// Mirror is false for the registry named in the reference itself. For
	// containerd and k3s an endpoint is a mirror when its host differs from
	// the reference's registry (the rule that adds ?ns=); for registries.conf
	// when it comes from a [[registry.mirror]].
	Mirror bool
	// Resolve reports whether the runtime asks this endpoint in the resolve
	// step: HEAD/GET manifests/<tag> for a tag, manifests/<digest> for a
	// digest.
	Resolve bool
	// Pull reports whether the runtime asks this endpoint for manifests and
	// blobs by digest once the reference is resolved.
	Pull bool
	// Namespace is the upstream registry host the runtime sends as the ns
	// query parameter; empty when it sends none.
	Namespace string
	// SkipVerify is true when the runtime does not verify the server's
	// certificate.
	SkipVerify bool
	// HTTPFallback is true when the runtime tries https first and retries
	// the same endpoint over plain http (see Fallback for the errors that
	// trigger it). URL.Scheme is the scheme tried first.
	HTTPFallback bool
	// Blocked is true when the runtime refuses the endpoint without a
	// request (registries.conf blocked = true); it moves on to the next one.
	Blocked bool
	// CAFiles are CA bundles the runtime adds to the system pool.
	CAFiles []string
	// ClientCerts are client certificate and key file pairs; an empty key
	// means the key is in the certificate file.
	ClientCerts [][2]string
	// Header holds extra request headers configured for the endpoint.
	Header http.Header
	// Auth is the credential configured for the endpoint (k3s configs), if
	// any. It never prints its secrets.
	Auth *Auth
	// Source says where the endpoint was configured, as file:line, or how it
	// was implied.
	Source string
	// Notes are caveats about this endpoint that a finding may need, such
	// as a rewrite the runtime may or may not apply.
	Notes []string
}

// ManifestURL is the URL the runtime requests for a manifest by tag or
// digest at this endpoint, the ns parameter included.
func (e Endpoint) ManifestURL(reference string) string {
	return e.requestURL("manifests", reference)
}

// BlobURL is the URL the runtime requests for a blob at this endpoint, the
// ns parameter included.
func (e Endpoint) BlobURL(digest string) string {
	return e.requestURL("blobs", digest)
}

func (e Endpoint) requestURL(kind, id string) string {
	if e.URL == nil {
		return ""
	}
	u := *e.URL
	u.Path = path.Join("/", e.URL.Path, e.Repository, kind, id)
	u.RawPath = ""
	if e.Namespace != "" {
		u.RawQuery = url.Values{"ns": {e.Namespace}}.Encode()
	}
	return u.String()
}

// Auth is a registry credential from k3s's configs section. Its String,
// GoString, LogValue and MarshalJSON never show a secret.
type Auth struct {
	Username      string
	Password      string
	Auth          string
	IdentityToken string
}

// ParseError is a configuration file the runtime would reject or ignore,
// with the line it fails at (0 when the parser gives none). Its text goes
// through regcheck's redaction rule (package internal/redact): no
// userinfo, no secret field's value.
type ParseError struct {
	Path string
	Line int
	Err  error
}

// Error is "file:line: message", redacted.
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return redact.String(fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err))
	}
	return redact.String(fmt.Sprintf("%s: %v", e.Path, e.Err))
}

// redactedError is an error of this package whose text, built from the
// configuration, goes through the redaction rule; it unwraps to the cause.
type redactedError struct{ err error }

func (e *redactedError) Error() string { return redact.String(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

// redacted wraps err (nil stays nil) so that its text is redacted.
func redacted(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err}
}

// Unwrap gives the parser's own error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrUnknownFormat is returned by Load for content that is none of the three
// formats.
var ErrUnknownFormat = errors.New("not a registries.yaml, containerd hosts directory or registries.conf")

// Config is a node's registry configuration in one of the three formats.
type Config struct {
	format string
	path   string
	hosts  *hostsDir  // containerd-hosts, and k3s after translation
	k3s    *k3sConfig // k3s only
	regs   *regConfig // registries.conf only
	// skipped are the drop-ins not read (not a regular file, too large).
	skipped []Notice
}

// Format names the configuration's format: FormatK3s, FormatContainerd or
// FormatRegistriesConf.
func (c *Config) Format() string { return c.format }

// Path is the file or directory the configuration was loaded from.
func (c *Config) Path() string { return c.path }

// Load reads the configuration at path, a file or a directory, and tells its
// format by content, not by name: a directory is a CRI-O registries.conf.d
// drop-in folder when it holds *.conf files and no hosts.toml (directly or
// in a host folder), else a containerd hosts directory (or one host's
// directory when it holds hosts.toml itself); a file is YAML with
// mirrors/configs (k3s), TOML with server/host keys (hosts.toml) or TOML
// with registry tables (registries.conf, whose sibling registries.conf.d
// folder, if any, is merged over it as CRI-O merges its drop-ins). A file
// the runtime would reject gives a *ParseError naming the file and line.
func Load(path string, opts ...Option) (*Config, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("loading registry configuration: %w", err)
	}
	var c *Config
	if info.IsDir() {
		c, err = loadDir(path, o)
	} else {
		c, err = loadFile(path, o)
	}
	if err != nil {
		return nil, redacted(err)
	}
	if err := o.check(c.format); err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return c, nil
}

func loadFile(path string, o options) (*Config, error) {
	data, err := inputfile.Read(path, inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("loading registry configuration: %w", err)
	}
	format, err := detect(path, data)
	if err != nil {
		return nil, err
	}
	switch format {
	case FormatK3s:
		return loadK3s(path, data, o)
	case FormatContainerd:
		return loadHostsFile(path, data, o)
	default:
		c, err := loadRegistriesConf(path, data)
		if err != nil {
			return nil, err
		}
		return loadDropIns(c, path, filepath.Join(filepath.Dir(path), dropInDirName))
	}
}

// loadDir reads a folder: a CRI-O registries.conf.d drop-in folder (its
// *.conf files over an empty registries.conf) when it holds *.conf files
// and no hosts.toml, else a containerd hosts directory.
func loadDir(path string, o options) (*Config, error) {
	dropIns, err := isDropInDir(path)
	if err != nil {
		return nil, err
	}
	if dropIns {
		return loadDropIns(nil, path, path)
	}
	return loadHostsPath(path, o)
}

// Endpoints lists, in the runtime's order, the endpoints the node would try
// for ref. Whether ref is a tag or a digest matters: containerd asks only
// hosts with the resolve capability for a tag, and registries.conf's
// pull-from-mirror and mirror-by-digest-only pick mirrors by it. The error
// is one the runtime itself would fail the pull with before any request
// (registries.conf: a prefix rewrite that gives an invalid reference;
// containerd: a host directory it cannot read).
func (c *Config) Endpoints(ref name.Reference) ([]Endpoint, error) {
	eps, err := c.endpoints(ref)
	if err != nil {
		return nil, redacted(err)
	}
	for i := range eps {
		for j, n := range eps[i].Notes {
			eps[i].Notes[j] = redact.String(n)
		}
	}
	return eps, nil
}

func (c *Config) endpoints(ref name.Reference) ([]Endpoint, error) {
	img := imageOf(ref)
	switch c.format {
	case FormatRegistriesConf:
		return c.regs.endpoints(img)
	case FormatK3s:
		eps, err := c.hosts.endpoints(img)
		if err != nil {
			return nil, err
		}
		c.k3s.annotate(eps)
		return eps, nil
	default:
		return c.hosts.endpoints(img)
	}
}
