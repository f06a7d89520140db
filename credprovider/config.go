package credprovider

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	credentialproviderv1alpha1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1alpha1"
	credentialproviderv1beta1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1beta1"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/internal/redact"
)

// configCodecs decodes CredentialProviderConfig files strictly (unknown and
// duplicate fields are errors), as the kubelet's codecs do.
var configCodecs = serializer.NewCodecFactory(newConfigScheme(), serializer.EnableStrict)

// olderConfigVersions are the versions of kubelet.config.k8s.io before v1
// whose CredentialProviderConfig the kubelet still reads. Their fields are
// v1's less tokenAttributes, so they decode into the v1 type (their own
// packages would bring in the whole KubeletConfiguration's dependencies).
var olderConfigVersions = []string{"v1beta1", "v1alpha1"}

func newConfigScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kubeletconfigv1.AddToScheme(s))
	for _, v := range olderConfigVersions {
		gvk := schema.GroupVersionKind{Group: kubeletconfigv1.GroupName, Version: v, Kind: "CredentialProviderConfig"}
		s.AddKnownTypeWithName(gvk, &kubeletconfigv1.CredentialProviderConfig{})
	}
	return s
}

// pluginAPIVersions are the CredentialProviderRequest versions a provider's
// apiVersion may name: the kubelet's list.
var pluginAPIVersions = map[string]schema.GroupVersion{
	credentialproviderv1alpha1.SchemeGroupVersion.String(): credentialproviderv1alpha1.SchemeGroupVersion,
	credentialproviderv1beta1.SchemeGroupVersion.String():  credentialproviderv1beta1.SchemeGroupVersion,
	credentialproviderv1.SchemeGroupVersion.String():       credentialproviderv1.SchemeGroupVersion,
}

// source is one provider of the configuration and the file it came from.
type source struct {
	file string
	line int // of its entry in providers; 0 when not known
	kubeletconfigv1.CredentialProvider
}

// where is the source's file:line, or its file when the line is not known,
// as its errors name it.
func (s source) where() string {
	if s.line > 0 {
		return fmt.Sprintf("%s:%d", s.file, s.line)
	}
	return s.file
}

// providerLines returns the line of each entry of a config file's
// providers list, in order (JSON is YAML), or nil when the file does not
// read so.
func providerLines(data []byte) []int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "providers" || m.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var out []int
		for _, it := range m.Content[i+1].Content {
			out = append(out, it.Line)
		}
		return out
	}
	return nil
}

// Load reads the kubelet's credential provider configuration, the file (or
// directory) of --image-credential-provider-config, and checks it as the
// kubelet does: each provider names an executable in binDir (the
// --image-credential-provider-bin-dir), has an apiVersion, matchImages and
// a defaultCacheDuration. A directory is read as the kubelet reads one:
// its *.json, *.yaml and *.yml files in lexical order, merged. Every
// problem is reported, each naming the file and the provider.
func Load(configFile, binDir string, opts ...Option) (*Providers, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, fmt.Errorf("credential providers: %w", err)
	}
	if err := checkBinDir(binDir); err != nil {
		return nil, err
	}
	sources, err := readConfig(configFile)
	if err != nil {
		return nil, err
	}
	if err := validate(configFile, sources); err != nil {
		return nil, fmt.Errorf("invalid credential provider config %s:\n%w", configFile, err)
	}
	ps := &Providers{opts: o}
	var errs []error
	for _, s := range sources {
		p, err := newProvider(s, binDir, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps.list = append(ps.list, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ps, nil
}

func checkBinDir(binDir string) error {
	if binDir == "" {
		return errors.New("credential provider bin dir: not set")
	}
	fi, err := os.Stat(binDir)
	if err != nil {
		return fmt.Errorf("credential provider bin dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("credential provider bin dir %s: not a directory", binDir)
	}
	return nil
}

// readConfig reads a config file, or each config file of a directory, and
// merges their providers in order. A provider name seen twice is an error.
func readConfig(path string) ([]source, error) {
	if path == "" {
		return nil, errors.New("credential provider config: no path")
	}
	files, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	var out []source
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading credential provider config: %w", err)
		}
		cfg, err := decodeFile(f, data)
		if err != nil {
			return nil, err
		}
		lines := providerLines(data)
		for i, p := range cfg.Providers {
			s := source{file: f, CredentialProvider: p}
			if i < len(lines) {
				s.line = lines[i]
			}
			if first, ok := seen[p.Name]; ok {
				return nil, fmt.Errorf("credential provider config %s: provider %q: duplicate name (first in %s)", s.where(), p.Name, first)
			}
			seen[p.Name] = s.where()
			out = append(out, s)
		}
	}
	return out, nil
}

func configFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".json", ".yaml", ".yml":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("credential provider config %s: no *.json, *.yaml or *.yml file in the directory", path)
	}
	return files, nil
}

// decodeFile decodes the config file f, whose content is data; its error
// names f and is redacted.
func decodeFile(f string, data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	cfg, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding credential provider config %s: %s", f, redact.String(err.Error()))
	}
	return cfg, nil
}

// decode reads one CredentialProviderConfig (JSON or YAML) of group
// kubelet.config.k8s.io: v1, or v1beta1 or v1alpha1 as the kubelet reads
// them too.
// Its errors never quote the file: apimachinery's missing kind and
// apiVersion errors quote it whole, env values included.
func decode(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	obj, gvk, err := configCodecs.UniversalDeserializer().Decode(data, nil, nil)
	switch {
	case runtime.IsMissingKind(err):
		return nil, errors.New("kind: missing, want CredentialProviderConfig")
	case runtime.IsMissingVersion(err):
		return nil, errors.New("apiVersion: missing, want kubelet.config.k8s.io/v1 (or v1beta1, v1alpha1)")
	case err != nil:
		return nil, err
	}
	if gvk.Kind != "CredentialProviderConfig" {
		return nil, fmt.Errorf("kind %q, want CredentialProviderConfig", gvk.Kind)
	}
	c, ok := obj.(*kubeletconfigv1.CredentialProviderConfig)
	if !ok {
		return nil, fmt.Errorf("unexpected %T for %s", obj, gvk)
	}
	if gvk.Version != kubeletconfigv1.SchemeGroupVersion.Version {
		for _, p := range c.Providers {
			if p.TokenAttributes != nil {
				return nil, fmt.Errorf("provider %q: tokenAttributes: unknown field in %s", p.Name, gvk.GroupVersion())
			}
		}
	}
	return c, nil
}

// validate checks the merged providers as the kubelet's
// validateCredentialProviderConfig does, and returns every problem.
func validate(configFile string, sources []source) error {
	if len(sources) == 0 {
		return fmt.Errorf("%s: providers: at least 1 item is required", configFile)
	}
	var errs []error
	for _, s := range sources {
		for _, msg := range validateProvider(s.CredentialProvider) {
			errs = append(errs, fmt.Errorf("%s: provider %q: %s", s.where(), s.Name, msg))
		}
	}
	return errors.Join(errs...)
}

func validateProvider(p kubeletconfigv1.CredentialProvider) []string {
	var msgs []string
	switch {
	case p.Name == "":
		msgs = append(msgs, "name: required")
	case strings.ContainsAny(p.Name, `/\`):
		msgs = append(msgs, "name: cannot contain a path separator: it names a file in the bin dir")
	case strings.Contains(p.Name, " "):
		msgs = append(msgs, "name: cannot contain spaces")
	case p.Name == "." || p.Name == "..":
		msgs = append(msgs, fmt.Sprintf("name: cannot be %q", p.Name))
	}
	if p.APIVersion == "" {
		msgs = append(msgs, "apiVersion: required")
	} else if _, ok := pluginAPIVersions[p.APIVersion]; !ok {
		msgs = append(msgs, fmt.Sprintf("apiVersion: %q not supported, want one of %s", p.APIVersion, strings.Join(supportedAPIVersions(), ", ")))
	}
	if len(p.MatchImages) == 0 {
		msgs = append(msgs, "matchImages: at least 1 item is required")
	}
	for _, m := range p.MatchImages {
		if _, err := parseSchemeless(m); err != nil {
			msgs = append(msgs, fmt.Sprintf("matchImages: %q is invalid: %v", m, err))
		}
	}
	switch {
	case p.DefaultCacheDuration == nil:
		msgs = append(msgs, "defaultCacheDuration: required")
	case p.DefaultCacheDuration.Duration < 0:
		msgs = append(msgs, fmt.Sprintf("defaultCacheDuration: %s must be greater than or equal to 0", p.DefaultCacheDuration.Duration))
	}
	if p.TokenAttributes != nil {
		msgs = append(msgs, validateTokenAttributes(p)...)
	}
	return msgs
}

// validateTokenAttributes checks tokenAttributes as the kubelet does with
// KubeletServiceAccountTokenForCredentialProviders enabled.
func validateTokenAttributes(p kubeletconfigv1.CredentialProvider) []string {
	t := p.TokenAttributes
	var msgs []string
	if t.ServiceAccountTokenAudience == "" {
		msgs = append(msgs, "tokenAttributes.serviceAccountTokenAudience: required")
	}
	if t.RequireServiceAccount == nil {
		msgs = append(msgs, "tokenAttributes.requireServiceAccount: required")
	} else if !*t.RequireServiceAccount && len(t.RequiredServiceAccountAnnotationKeys) > 0 {
		msgs = append(msgs, "tokenAttributes.requiredServiceAccountAnnotationKeys: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set")
	}
	if p.APIVersion != credentialproviderv1.SchemeGroupVersion.String() {
		msgs = append(msgs, "tokenAttributes: only supported for apiVersion "+credentialproviderv1.SchemeGroupVersion.String())
	}
	msgs = append(msgs, validateAnnotationKeys("requiredServiceAccountAnnotationKeys", t.RequiredServiceAccountAnnotationKeys)...)
	msgs = append(msgs, validateAnnotationKeys("optionalServiceAccountAnnotationKeys", t.OptionalServiceAccountAnnotationKeys)...)
	for _, k := range t.RequiredServiceAccountAnnotationKeys {
		if slices.Contains(t.OptionalServiceAccountAnnotationKeys, k) {
			msgs = append(msgs, fmt.Sprintf("tokenAttributes: annotation key %q cannot be both required and optional", k))
		}
	}
	switch t.CacheType {
	case kubeletconfigv1.TokenServiceAccountTokenCacheType, kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType:
	case "":
		msgs = append(msgs, "tokenAttributes.cacheType: required (Token or ServiceAccount)")
	default:
		msgs = append(msgs, fmt.Sprintf("tokenAttributes.cacheType: %q not supported, want Token or ServiceAccount", t.CacheType))
	}
	return msgs
}

func validateAnnotationKeys(field string, keys []string) []string {
	var msgs []string
	seen := map[string]bool{}
	for _, k := range keys {
		// QualifiedName, case aside, as for annotation keys in object metadata.
		for _, m := range validation.IsQualifiedName(strings.ToLower(k)) {
			msgs = append(msgs, fmt.Sprintf("tokenAttributes.%s: %q: %s", field, k, m))
		}
		if seen[k] {
			msgs = append(msgs, fmt.Sprintf("tokenAttributes.%s: %q: duplicate", field, k))
		}
		seen[k] = true
	}
	return msgs
}

func supportedAPIVersions() []string {
	vs := make([]string, 0, len(pluginAPIVersions))
	for v := range pluginAPIVersions {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// lookPlugin finds the provider's executable in binDir, as the kubelet does
// (exec.LookPath, which also finds name.exe on Windows).
func lookPlugin(binDir string, s source) (string, error) {
	bin, err := exec.LookPath(filepath.Join(binDir, s.Name))
	if err != nil {
		return "", fmt.Errorf("%s: provider %q: plugin executable: %w", s.where(), s.Name, err)
	}
	return bin, nil
}
