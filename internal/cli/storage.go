package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// storageFlags are scan's --storage and --registry: walk the images over a
// registry's filesystem storage instead of its API.
type storageFlags struct {
	dir  string
	host string
}

func (f *storageFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "storage", "", "walk the images over this registry's filesystem storage rootdirectory (holding docker/registry/v2), read only, with no HTTP; stop the registry or keep it idle meanwhile")
	fs.StringVar(&f.host, "registry", "", "with --storage, the registry host[:port] whose storage it is; images on other hosts are not checked (default: the one host the images name)")
}

// validate rejects what --storage cannot answer: a cluster scan also asks
// the registry which tags point at pinned digests, and with pull secrets,
// as whom.
func (f *storageFlags) validate(cluster bool) error {
	switch {
	case f.dir == "" && f.host != "":
		return errors.New("--registry goes with --storage")
	case f.dir != "" && cluster:
		return errors.New("--storage reads the images of references, -f and --images-from; --cluster also asks the registry's tags, which its storage does not answer")
	}
	return nil
}

// scanner returns a Scanner walking the storage, as the registry whose
// host the targets name serves it (see storageHost), and that host.
func (f *storageFlags) scanner(targets []types.Target, opts []scan.Option) (*scan.Scanner, string, error) {
	host, err := storageHost(f.host, targets, "images")
	if err != nil {
		return nil, "", err
	}
	st, err := storage.Open(f.dir)
	if err != nil {
		return nil, "", usageError(fmt.Errorf("--storage: %w", err))
	}
	// A storage says nothing of the release serving it. As 2.x does, a
	// manifest only its _layers link names (storage written by 2.1.0) is
	// served; 3.x would not serve it. Anything else reads alike.
	r := hostReader{r: st.Reader(storage.V2), host: host}
	sc, err := scan.New(append(opts, scan.WithReader(r))...)
	if err != nil {
		return nil, "", usageError(err)
	}
	return sc, host, nil
}

// storageHost is the registry host whose storage --storage reads: host
// (--registry) when given, else the one host the targets name ("" when
// none parses). A storage holds no host name: matching the references of
// two registries by path alone would confuse ghcr.io/org/app with this
// org/app, so several hosts without --registry are a usage error. what
// names the targets in that message.
// checkRegistryHost refuses a --registry that is not a host[:port] (a
// URL, userinfo, a path), naming it redacted.
func checkRegistryHost(host string) error {
	if host != "" && strings.ContainsAny(host, "/@ ") {
		return fmt.Errorf("--registry %q: a registry host[:port], not a URL nor a repository", redact.String(host))
	}
	return nil
}

func storageHost(host string, targets []types.Target, what string) (string, error) {
	if host != "" {
		return host, nil
	}
	switch hosts := gc.Hosts(targets); len(hosts) {
	case 0:
		return "", nil
	case 1:
		return hosts[0], nil
	default:
		return "", usageError(fmt.Errorf("the %s name %d registries (%s): pass --registry HOST for the one whose storage this is", what, len(hosts), strings.Join(hosts, ", ")))
	}
}

// onHost keeps, with --storage, the targets on host, and those that do not
// parse (their walk reports them invalid); each other one is a notice: it
// is not in this storage, and was not checked. Without --storage it keeps
// every target.
func (f *storageFlags) onHost(targets []types.Target, host string) ([]types.Target, []types.InputError) {
	if f.dir == "" {
		return targets, nil
	}
	var keep []types.Target
	var notices []types.InputError
	for _, t := range targets {
		norm, ref, err := scan.ParseReference(t.Ref)
		if err != nil || ref.Context().RegistryStr() == host {
			keep = append(keep, t)
			continue
		}
		ie := types.InputError{Source: "args", Notice: true,
			Message: fmt.Sprintf("%s: not checked: on registry %s, not in the storage of %s that --storage reads", norm, ref.Context().RegistryStr(), host)}
		if len(t.Uses) > 0 {
			ie.Source, ie.Line = t.Uses[0].Source, t.Uses[0].Line
			if t.Uses[0].File != "" {
				ie.Source = t.Uses[0].File
			}
		}
		notices = append(notices, ie)
	}
	return keep, notices
}

// hostReader is a storage's reader answering for one registry host's
// repositories: the storage's paths carry no host, and a repository of
// another host is not this storage's to say absent. Asked for one, it
// fails (a fault: the image is unknown, never broken).
type hostReader struct {
	r    walk.Reader
	host string
}

var _ walk.Reader = hostReader{}

func (h hostReader) on(repo name.Repository) error {
	if repo.RegistryStr() == h.host {
		return nil
	}
	return fmt.Errorf("repository %s is on registry %s, not in the storage of %s", repo.Name(), repo.RegistryStr(), h.host)
}

func (h hostReader) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	if err := h.on(repo); err != nil {
		return walk.Descriptor{}, err
	}
	return h.r.Resolve(ctx, repo, tag)
}

func (h hostReader) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	if err := h.on(repo); err != nil {
		return walk.Manifest{}, err
	}
	return h.r.Manifest(ctx, repo, digest)
}

func (h hostReader) Blob(ctx context.Context, repo name.Repository, digest string) error {
	if err := h.on(repo); err != nil {
		return err
	}
	return h.r.Blob(ctx, repo, digest)
}
