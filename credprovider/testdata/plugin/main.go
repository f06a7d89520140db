// Command plugin is a kubelet credential provider plugin for the tests of
// package credprovider. It reads a CredentialProviderRequest on stdin and
// answers as its environment says:
//
//	PLUGIN_MODE            ok (default), fail, sleep, garbage, wrongapi,
//	                       wrongkind, unknownfield, fail-after-response,
//	                       bigstderr, child-holds-stdout (answers, then
//	                       leaves a child holding stdout open for 10 s)
//	PLUGIN_USERNAME        the username returned (default "user")
//	PLUGIN_PASSWORD        the password returned (default "pass")
//	PLUGIN_CACHE_KEY_TYPE  the cacheKeyType returned (default Registry)
//	PLUGIN_CACHE_DURATION  the cacheDuration returned; unset: none
//	PLUGIN_AUTH_KEYS       comma-separated auth keys (default: the image's
//	                       registry); "-" for no auth map
//	PLUGIN_SLEEP           how long mode sleep sleeps (default 1m)
//	PLUGIN_LOG             a file to which each run appends one JSON line
//	                       with its args and the request it read
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Image      string `json:"image"`
}

type auth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type response struct {
	APIVersion    string          `json:"apiVersion"`
	Kind          string          `json:"kind"`
	CacheKeyType  string          `json:"cacheKeyType"`
	CacheDuration string          `json:"cacheDuration,omitempty"`
	Auth          map[string]auth `json:"auth,omitempty"`
	Extra         string          `json:"extra,omitempty"`
}

func main() {
	if os.Getenv("PLUGIN_HOLD") != "" {
		time.Sleep(10 * time.Second) // the child of child-holds-stdout
		return
	}
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		fail("request is not JSON: %v", err)
	}
	record(raw)
	resp := response{
		APIVersion:    req.APIVersion,
		Kind:          "CredentialProviderResponse",
		CacheKeyType:  env("PLUGIN_CACHE_KEY_TYPE", "Registry"),
		CacheDuration: os.Getenv("PLUGIN_CACHE_DURATION"),
		Auth:          map[string]auth{},
	}
	a := auth{Username: env("PLUGIN_USERNAME", "user"), Password: env("PLUGIN_PASSWORD", "pass")}
	keys := env("PLUGIN_AUTH_KEYS", strings.SplitN(req.Image, "/", 2)[0])
	if keys == "-" {
		resp.Auth = nil
	} else {
		for _, k := range strings.Split(keys, ",") {
			resp.Auth[k] = a
		}
	}
	switch mode := env("PLUGIN_MODE", "ok"); mode {
	case "ok":
	case "fail":
		fail("no credentials for %s: access denied", req.Image)
	case "sleep":
		d, _ := time.ParseDuration(env("PLUGIN_SLEEP", "1m"))
		time.Sleep(d)
	case "garbage":
		fmt.Print("this is not json " + a.Password)
		return
	case "wrongapi":
		resp.APIVersion = "credentialprovider.kubelet.k8s.io/v1alpha1"
	case "wrongkind":
		resp.Kind = "CredentialProviderRequest"
	case "unknownfield":
		resp.Extra = a.Password
	case "fail-after-response":
		json.NewEncoder(os.Stdout).Encode(resp)
		fail("failed after writing a response")
	case "child-holds-stdout":
		json.NewEncoder(os.Stdout).Encode(resp)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "PLUGIN_HOLD=1")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fail("starting the child: %v", err)
		}
		os.Exit(0)
	case "bigstderr":
		fmt.Fprint(os.Stderr, strings.Repeat("x", 5000))
		os.Exit(2)
	default:
		fail("unknown PLUGIN_MODE %q", mode)
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fail("writing response: %v", err)
	}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func record(raw []byte) {
	path := os.Getenv("PLUGIN_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail("opening log: %v", err)
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]any{"args": os.Args[1:], "request": json.RawMessage(raw)})
	f.Write(append(line, '\n'))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
