package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/regcheck/regcheck/credprovider"
	"github.com/regcheck/regcheck/scan"
)

// providerFlags are --image-credential-provider-config and
// --image-credential-provider-bin-dir: the kubelet's credential provider
// plugins, loaded once however many Scanners a command makes (one after
// another), so that they share the plugins' credential cache.
type providerFlags struct {
	config, binDir string
	timeout        time.Duration

	loaded bool
	ps     *credprovider.Providers
	err    error
}

// Help text of the two flags, the kubelet's own.
const (
	providerConfigHelp = "the kubelet's --image-credential-provider-config: a CredentialProviderConfig file (or folder); an image one of its providers matches is read with the plugin's credentials instead of the Docker config's. Needs --image-credential-provider-bin-dir"
	providerBinDirHelp = "the kubelet's --image-credential-provider-bin-dir: the folder of the plugins the config names. Needs --image-credential-provider-config"
	// The kubelet's own timeout is a constant: execPlugin's catch-all
	// minute (pkg/credentialprovider/plugin/plugin.go).
	providerTimeoutHelp = "how long a credential provider plugin may run before it is killed (the kubelet's fixed timeout is 1m). A plugin that fails or times out is not run again in the run for images its same matchImages entry matches: they get its first failure"
)

// set reports whether either flag was given.
func (p *providerFlags) set() bool { return p.config != "" || p.binDir != "" }

// options are the scan option that asks the plugins before the keychain
// regcheck asks without them (the Docker config), or none when neither
// flag is given. The kubelet looks an image up in its node keyring (the
// config.json files of the node) before its plugins, and pulls with each
// credential in turn until one works; a keychain yields one, and the
// Docker config here is the one of the machine regcheck runs on, a
// stand-in for the node's, while the plugins are the nodes' own: so an
// image a plugin matches gets the plugin's credential, any other the
// Docker config's (a pod's pull secrets come before both: see
// cluster.CheckWithPullSecretsThen). The option's error, one flag without the
// other or a config that does not load, makes scan.New fail: a usage error.
func (p *providerFlags) options(g *globals) []scan.Option {
	if !p.set() {
		return nil
	}
	return []scan.Option{scan.WithKeychainFirst(func() (authn.Keychain, error) {
		ps, err := p.load(g)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return ps, nil
	})}
}

// load checks that both flags are given and loads the config, once. No
// credential is read here: the plugins run when an image needs them.
func (p *providerFlags) load(g *globals) (*credprovider.Providers, error) {
	if p.loaded {
		return p.ps, p.err
	}
	p.loaded = true
	switch {
	case p.config == "":
		p.err = errors.New("--image-credential-provider-bin-dir needs --image-credential-provider-config: give both, as to the kubelet, or neither")
	case p.binDir == "":
		p.err = errors.New("--image-credential-provider-config needs --image-credential-provider-bin-dir: give both, as to the kubelet, or neither")
	default:
		p.ps, p.err = credprovider.Load(p.config, p.binDir, credprovider.WithLogger(g.logger), credprovider.WithTimeout(p.timeout))
		if p.err != nil {
			// The errors name the file and the provider; one line each,
			// as Run prints a line feed escaped.
			msg := strings.ReplaceAll(strings.ReplaceAll(p.err.Error(), ":\n", ": "), "\n", "; ")
			p.err = fmt.Errorf("--image-credential-provider-config, --image-credential-provider-bin-dir: %s", msg)
		} else {
			g.logger.Debug("image credential providers loaded", "config", p.config, "providers", p.ps.String())
		}
	}
	return p.ps, p.err
}
