package pullpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/regcheck/regcheck/internal/inputfile"
)

// dropInDirName is the drop-in folder beside a registries.conf: CRI-O's
// default file /etc/containers/registries.conf has its drop-ins in
// /etc/containers/registries.conf.d (containers/image
// pkg/sysregistriesv2/system_registries_v2.go, systemRegistriesConfDirPath).
const dropInDirName = "registries.conf.d"

// isDropInDir reports whether dir is a registries.conf.d folder rather
// than a containerd hosts directory: it holds at least one *.conf file,
// and neither a hosts.toml nor a folder holding one.
func isDropInDir(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("loading registry configuration: %w", err)
	}
	conf := false
	for _, ent := range ents {
		full := filepath.Join(dir, ent.Name())
		st, err := os.Stat(full)
		switch {
		case err != nil:
			continue
		case ent.Name() == "hosts.toml":
			return false, nil
		case st.IsDir():
			if _, err := os.Stat(filepath.Join(full, "hosts.toml")); err == nil {
				return false, nil
			}
		case strings.HasSuffix(ent.Name(), ".conf"):
			conf = true
		}
	}
	return conf, nil
}

// dropInFiles are the *.conf files of dir, as dropInConfigs lists them:
// filepath.WalkDir's lexical order, no subfolder, a missing folder none.
func dropInFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var out []string
	for _, ent := range ents {
		if !ent.IsDir() && strings.HasSuffix(ent.Name(), ".conf") {
			out = append(out, filepath.Join(dir, ent.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// loadDropIns merges the drop-ins of dir over base (nil: an empty
// registries.conf, as tryUpdatingCache starts from when the main file is
// missing). Each file is read and checked alone (loadConfigFile, v2
// only); a file that fails fails the whole configuration, as it does
// CRI-O's.
func loadDropIns(base *Config, path, dir string) (*Config, error) {
	files, err := dropInFiles(dir)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = &Config{format: FormatRegistriesConf, path: path, regs: &regConfig{path: path}}
	}
	for _, f := range files {
		data, err := inputfile.Read(f, inputfile.MaxConfig)
		if os.IsNotExist(err) {
			continue // removed since the listing: containers/image skips it too
		}
		if errors.Is(err, inputfile.ErrNotRegular) || errors.Is(err, inputfile.ErrTooLarge) {
			base.skipped = append(base.skipped, Notice{Path: f, Message: err.Error() + ": the drop-in is skipped"})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loading drop-in registries configuration: %w", err)
		}
		drop, err := loadRegistriesConf(f, data)
		if err != nil {
			return nil, err
		}
		base.regs.registries = mergeRegistries(base.regs.registries, drop.regs.registries)
	}
	return base, nil
}

// mergeRegistries is parsedConfig.updateWithConfigurationFrom for the
// [[registry]] tables: a drop-in's registry replaces, whole, the one of
// the same prefix before it (its mirrors are not added to the earlier
// ones); the result sorted by prefix.
func mergeRegistries(base, updates []regRegistry) []regRegistry {
	byPrefix := make(map[string]regRegistry, len(base)+len(updates))
	for _, r := range base {
		byPrefix[r.Prefix] = r
	}
	for _, r := range updates {
		byPrefix[r.Prefix] = r
	}
	out := make([]regRegistry, 0, len(byPrefix))
	for _, r := range byPrefix {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out
}
