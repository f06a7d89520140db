package pullpath

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/regcheck/regcheck/internal/inputfile"
)

// hostsDir is a containerd config_path: one directory per registry host.
type hostsDir struct {
	root string
	dirs map[string]*hostsFile // by directory name: "host", "host_port_", "_default"
}

// hostDirectory is containerd's (and k3s's) directory name for a host:
// "host:port" becomes "host_port_" (config/hosts.go hostDirectory).
func hostDirectory(host string) string {
	if i := strings.LastIndex(host, ":"); i > 0 {
		return host[:i] + "_" + host[i+1:] + "_"
	}
	return host
}

// hostPaths is the order containerd looks for a host's directory
// (config/config_unix.go hostPaths): host_port_, then host:port, then
// _default. The first that exists is used alone; directories never merge.
func hostPaths(host string) []string {
	var paths []string
	if ch := hostDirectory(host); ch != host {
		paths = append(paths, ch)
	}
	return append(paths, host, "_default")
}

func (d *hostsDir) lookup(host string) *hostsFile {
	for _, p := range hostPaths(host) {
		if f, ok := d.dirs[p]; ok {
			return f
		}
	}
	return nil
}

// loadHostsPath loads a config_path root, or a single host directory when
// path holds a hosts.toml itself.
func loadHostsPath(path string, o options) (*Config, error) {
	if st, err := os.Stat(filepath.Join(path, "hosts.toml")); err == nil && !st.IsDir() {
		return loadHostDirAlone(path, o)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("loading containerd hosts directory: %w", err)
	}
	d := &hostsDir{root: path, dirs: map[string]*hostsFile{}}
	for _, ent := range ents {
		full := filepath.Join(path, ent.Name())
		st, err := os.Stat(full)
		if os.IsNotExist(err) {
			continue // a dangling link: containerd's os.Stat finds nothing either
		}
		if err != nil {
			return nil, fmt.Errorf("loading containerd hosts directory: %w", err)
		}
		if !st.IsDir() {
			// containerd's HostDirFromRoot matches any existing path, then
			// fails to read <file>/hosts.toml: every pull of that host fails.
			d.dirs[ent.Name()] = &hostsFile{path: full, err: fmt.Errorf("%s is a file, not a host directory: containerd fails every pull from %s", full, ent.Name())}
			continue
		}
		f, err := loadHostDir(full, o)
		if err != nil {
			return nil, err
		}
		d.dirs[ent.Name()] = f
	}
	return &Config{format: FormatContainerd, path: path, hosts: d}, nil
}

func loadHostDirAlone(dir string, o options) (*Config, error) {
	f, err := loadHostDir(dir, o)
	if err != nil {
		return nil, err
	}
	d := &hostsDir{root: filepath.Dir(dir), dirs: map[string]*hostsFile{filepath.Base(dir): f}}
	return &Config{format: FormatContainerd, path: dir, hosts: d}, nil
}

// loadHostsFile loads one hosts.toml given as a file: it configures the
// host its directory is named for.
func loadHostsFile(file string, data []byte, o options) (*Config, error) {
	dir := filepath.Dir(file)
	f, err := parseHostsFile(file, dir, data, o.k3sRules(data))
	if err != nil {
		return nil, err
	}
	d := &hostsDir{root: filepath.Dir(dir), dirs: map[string]*hostsFile{filepath.Base(dir): f}}
	return &Config{format: FormatContainerd, path: file, hosts: d}, nil
}

// loadHostDir is containerd's loadHostDir: hosts.toml when it exists and is
// not empty, else Docker-style certificate files.
func loadHostDir(dir string, o options) (*hostsFile, error) {
	file := filepath.Join(dir, "hosts.toml")
	data, err := inputfile.Read(file, inputfile.MaxConfig)
	if err != nil && !os.IsNotExist(err) {
		// A symlink loop, a named pipe, a file past the cap: a configuration
		// error of the file, said at load as the parse errors are, not a
		// registry's fault at each pull.
		return nil, fmt.Errorf("loading containerd hosts file: %w", err)
	}
	if len(data) == 0 {
		return loadCertFiles(dir)
	}
	// containerd logs a hosts.toml it cannot decode and falls back to the
	// certificate files; regcheck reports it instead.
	return parseHostsFile(file, dir, data, o.k3sRules(data))
}

// k3sRules says whether k3s's containerd rules apply to a hosts.toml.
func (o options) k3sRules(data []byte) bool {
	switch o.runtime {
	case RuntimeK3s:
		return true
	case RuntimeContainerd:
		return false
	default:
		return isK3sHeader(data)
	}
}

// loadCertFiles is containerd's loadCertFiles: *.crt are CAs, *.cert are
// client certificates with the *.key of the same name, all for the upstream
// registry only.
func loadCertFiles(dir string) (*hostsFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	e := hostEntry{root: true}
	for _, ent := range ents {
		if ent.IsDir() {
			continue
		}
		n := ent.Name()
		if strings.HasSuffix(n, ".crt") {
			e.caCerts = append(e.caCerts, filepath.Join(dir, n))
		}
		if strings.HasSuffix(n, ".cert") {
			pair := [2]string{filepath.Join(dir, n), ""}
			key := filepath.Join(dir, strings.TrimSuffix(n, ".cert")+".key")
			if _, err := os.Stat(key); err == nil {
				pair[1] = key
			}
			e.clientPairs = append(e.clientPairs, pair)
		}
	}
	return &hostsFile{path: dir, dir: dir, hosts: []hostEntry{e}}, nil
}

// isLocalhost is containerd's docker.IsLocalhost.
func isLocalhost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
