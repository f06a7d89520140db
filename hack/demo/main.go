// Command demo reproduces the seed incident on a real docker/distribution
// 2.8.3 registry and lets regcheck diagnose it: it starts the registry on
// 127.0.0.1, pushes images shaped like the seed's (a buildx index with an
// attestation, multi-platform indexes, a manifest list, single images),
// predicts with `regcheck gc-check` what the collector will break, runs the
// registry's own `garbage-collect --delete-untagged`, and runs
// `regcheck scan -f examples/manifests`, then previews `regcheck pin` on the
// same manifests (it refuses to pin the broken images). Last, it puts the
// images back with `regcheck rescue` from a node's content store (filled
// before the GC with what a linux/amd64 node's pull keeps) and scans again
// with --platform linux/amd64. It stops what it started.
//
// usage: go run ./hack/demo -regcheck bin/regcheck [-addr 127.0.0.1:5055] [-manifests examples/manifests] [-- regcheck flags]
//
// With -seed it only pushes the images to a registry already serving at
// -addr, and exits: docker-compose.yml's seeding step.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

func main() {
	regcheck := flag.String("regcheck", "bin/regcheck", "the regcheck binary to run")
	addr := flag.String("addr", "127.0.0.1:5055", "address of the demo registry (the example manifests name it)")
	manifests := flag.String("manifests", "examples/manifests", "manifests folder to scan")
	seed := flag.Bool("seed", false, "only push the images to the registry serving at -addr, and exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *seed {
		_, err = push(ctx, *addr)
	} else {
		err = run(ctx, *regcheck, *addr, *manifests, flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

func run(ctx context.Context, regcheck, addr, manifests string, extra []string) error {
	bin, err := registry.Binary(registry.V2)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "regcheck-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("starting docker/distribution v2.8.3 on %s (storage in %s)", addr, dir)
	reg, err := registry.Start(ctx, bin, dir, addr)
	if err != nil {
		return fmt.Errorf("%w\n(is something else listening on %s? pass -addr, and edit the example manifests to match)", err, addr)
	}
	defer reg.Stop()

	imgs, err := push(ctx, reg.Host())
	if err != nil {
		return err
	}

	node := filepath.Join(dir, "node", "io.containerd.content.v1.content")
	step("a linux/amd64 node pulls every image: its containerd content store keeps the index, the amd64 child, its config and layers (no other platform, no attestation)")
	var refs []string
	for _, im := range imgs {
		if err := fillNode(ctx, node, im.Ref); err != nil {
			return fmt.Errorf("filling the node's content store: %w", err)
		}
		refs = append(refs, im.Ref)
	}
	fmt.Printf("    %s\n", node)

	if err := reg.Stop(); err != nil {
		return err
	}
	step("before collecting: regcheck gc-check --storage <registry storage> --gc-model distribution-2.8 --delete-untagged -f %s", manifests)
	cmd := exec.CommandContext(ctx, regcheck, "gc-check", "--storage", reg.Root, "--gc-model", "distribution-2.8", "--delete-untagged", "-f", manifests)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("running %s gc-check: %w", regcheck, err)
	}

	step("running the registry's own garbage collector: registry garbage-collect --delete-untagged=true")
	start := time.Now()
	out, err := reg.GC(ctx, true, false)
	if err != nil {
		return err
	}
	summary := "done"
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "eligible for deletion") && strings.Contains(line, "marked") {
			summary = strings.TrimSpace(line) // "N blobs marked, N blobs and N manifests eligible for deletion"
		}
	}
	fmt.Printf("    %s (%s)\n    every tag still lists and every index still resolves\n", summary, time.Since(start).Round(time.Millisecond))
	if err := reg.Restart(ctx); err != nil {
		return err
	}

	args := append([]string{"scan", "-f", manifests}, extra...)
	step("regcheck %s", strings.Join(args, " "))
	cmd = exec.CommandContext(ctx, regcheck, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	switch {
	case err == nil:
		fmt.Println("\nregcheck exited 0: nothing broken.")
	case errors.As(err, &ee):
		fmt.Printf("\nregcheck exited %d (1 = an image at or above --fail-on, as expected here).\n", ee.ExitCode())
	default:
		return fmt.Errorf("running %s: %w", regcheck, err)
	}
	step("regcheck pin %s   (a preview: prints the diff, changes nothing)", manifests)
	cmd = exec.CommandContext(ctx, regcheck, "pin", manifests)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("running %s pin: %w", regcheck, err)
	}

	args = append([]string{"rescue", "--from-content-store", filepath.Dir(node), "--write", "--tag", "rescued"}, refs...)
	step("regcheck rescue --from-content-store <the node's containerd root> --write --tag rescued <every demo image>")
	if err := runRegcheck(ctx, regcheck, args, "1 = something stays missing: other platforms' children and the attestation, which no amd64 node holds"); err != nil {
		return err
	}
	args = append([]string{"scan", "--platform", "linux/amd64", "-f", manifests}, extra...)
	step("regcheck %s   (what the cluster's amd64 nodes pull)", strings.Join(args, " "))
	if err := runRegcheck(ctx, regcheck, args, "1 = an image at or above --fail-on"); err != nil {
		return err
	}
	step("stopping the registry and removing its storage")
	return nil
}

// push pushes the demo's images to the registry at host and lists them.
func push(ctx context.Context, host string) ([]fixture.Image, error) {
	step("pushing images the way CI pushes them (a buildx index with an attestation child, …)")
	imgs, err := fixture.Push(ctx, host, "demo/")
	if err != nil {
		return nil, err
	}
	for _, im := range imgs {
		kind := "image"
		if len(im.Children) > 0 {
			kind = fmt.Sprintf("index, %d children", len(im.Children))
		}
		fmt.Printf("    %-40s %s (%s)\n", im.Ref, im.Digest.String()[:19], kind)
	}
	return imgs, nil
}

// runRegcheck runs regcheck with args and says how it exited; expected
// explains exit code 1.
func runRegcheck(ctx context.Context, regcheck string, args []string, expected string) error {
	cmd := exec.CommandContext(ctx, regcheck, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	var ee *exec.ExitError
	switch err := cmd.Run(); {
	case err == nil:
		fmt.Println("\nregcheck exited 0.")
	case errors.As(err, &ee):
		fmt.Printf("\nregcheck exited %d (%s).\n", ee.ExitCode(), expected)
	default:
		return fmt.Errorf("running %s: %w", regcheck, err)
	}
	return nil
}

// fillNode keeps what a linux/amd64 node's pull of ref keeps, laid out as
// containerd lays its content store out (blobs/sha256/<hex>, read-only, and
// an ingest/ folder): the manifest or index the tag names and, for an
// index, its linux/amd64 child; the config and layers.
func fillNode(ctx context.Context, content, ref string) error {
	for _, d := range []string{"blobs/sha256", "ingest"} {
		if err := os.MkdirAll(filepath.Join(content, d), 0o755); err != nil {
			return err
		}
	}
	keep := func(b []byte) error {
		h, _, err := v1.SHA256(bytes.NewReader(b))
		if err != nil {
			return err
		}
		p := filepath.Join(content, "blobs", "sha256", h.Hex)
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		return os.WriteFile(p, b, 0o444)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Get(r, remote.WithContext(ctx))
	if err != nil {
		return err
	}
	img, err := desc.Image() // an index's linux/amd64 child
	if err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	blobs := [][]byte{desc.Manifest, manifest, config}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		blobs = append(blobs, b)
	}
	for _, b := range blobs {
		if err := keep(b); err != nil {
			return err
		}
	}
	return nil
}
