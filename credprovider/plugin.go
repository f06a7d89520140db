package credprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	credentialproviderapi "k8s.io/kubelet/pkg/apis/credentialprovider"
	"k8s.io/kubelet/pkg/apis/credentialprovider/install"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/types"
)

// maxStdout bounds the response a plugin writes; what it writes to stderr
// is counted, never kept.
const maxStdout = 1 << 20

// waitDelay is how long the pipes of a plugin that exited or was killed
// may stay open (held by a child of the plugin) before the run stops
// reading them; a plugin that exited 0 keeps the answer read by then.
const waitDelay = 2 * time.Second

var (
	pluginScheme = newPluginScheme()
	// pluginCodecs decode responses strictly, as the kubelet's do.
	pluginCodecs = serializer.NewCodecFactory(pluginScheme, serializer.EnableStrict)
)

func newPluginScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

// PluginError is a plugin run that gave no usable response: it did not
// start, exited non-zero, timed out, or wrote a response of another
// apiVersion or kind, or one that does not decode. It wraps
// types.ErrCredentials and the cause. Its text never quotes the plugin's
// stderr or stdout (a plugin may echo a password or its config's env): it
// says how many bytes the plugin wrote to stderr, and the cause (its exit
// status), redacted.
type PluginError struct {
	// Provider is the provider's name in the config.
	Provider string
	// Image is the image the credentials were asked for.
	Image string
	// StderrBytes is how many bytes the plugin wrote to stderr.
	StderrBytes int
	// Err is the cause.
	Err error
}

// Error names the provider, the image and the cause, and says whether the
// plugin wrote to stderr, not what.
func (e *PluginError) Error() string {
	s := fmt.Sprintf("credential provider %q for %s: %v", e.Provider, e.Image, e.Err)
	if e.StderrBytes > 0 {
		s += fmt.Sprintf("; the plugin wrote %d bytes to stderr (not shown: it may hold secrets)", e.StderrBytes)
	}
	return redact.String(s)
}

// Unwrap returns types.ErrCredentials and the cause.
func (e *PluginError) Unwrap() []error { return []error{types.ErrCredentials, e.Err} }

// exec runs the plugin for image, as the kubelet's execPlugin does: the
// request on stdin, the config's args, the environment plus the config's
// env (which wins), the response on stdout, within the timeout.
func (p *provider) exec(ctx context.Context, image string) (*credentialproviderv1.CredentialProviderResponse, error) {
	req, err := encodeRequest(image, p.gv)
	if err != nil {
		return nil, &PluginError{Provider: p.name, Image: image, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	stdout := &capped{max: maxStdout}
	stderr := &capped{max: 0}
	cmd := exec.CommandContext(ctx, p.bin, p.args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), stdout, stderr
	cmd.Env = append(os.Environ(), p.env...)
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		// The plugin exited 0 but a child of its holds stdout open: what
		// it wrote before exiting is its answer (the kubelet, waiting for
		// stdout's EOF, would get it once the child ends).
		err = nil
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("timed out after %s: %w", p.timeout, ctx.Err())
	case ctx.Err() != nil:
		err = ctx.Err()
	case err != nil:
		err = fmt.Errorf("plugin %s: %w", p.bin, err)
	case stdout.dropped > 0:
		err = fmt.Errorf("response over %d bytes", maxStdout)
	}
	if err != nil {
		return nil, &PluginError{Provider: p.name, Image: image, StderrBytes: stderr.dropped, Err: err}
	}
	resp, err := decodeResponse(stdout.Bytes(), p.apiVersion)
	if err != nil {
		return nil, &PluginError{Provider: p.name, Image: image, Err: err}
	}
	return resp, nil
}

// encodeRequest encodes a CredentialProviderRequest for image in version gv.
func encodeRequest(image string, gv schema.GroupVersion) ([]byte, error) {
	req := &credentialproviderv1.CredentialProviderRequest{Image: image}
	// Through the internal type, which every version converts from.
	var internal credentialproviderapi.CredentialProviderRequest
	if err := pluginScheme.Convert(req, &internal, nil); err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	info, ok := runtime.SerializerInfoForMediaType(pluginCodecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, errors.New("encoding request: no JSON serializer")
	}
	b, err := runtime.Encode(pluginCodecs.EncoderForVersion(info.Serializer, gv), &internal)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	return b, nil
}

// decodeResponse checks that data is a CredentialProviderResponse of
// apiVersion and decodes it. Its errors never quote data: a response that
// fails to decode may still hold a password.
func decodeResponse(data []byte, apiVersion string) (*credentialproviderv1.CredentialProviderResponse, error) {
	gvk, err := kjson.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return nil, errors.New("response is not a JSON object with apiVersion and kind")
	}
	if got := gvk.GroupVersion().String(); got != apiVersion {
		return nil, fmt.Errorf("response apiVersion %q, want %q (the config's apiVersion)", got, apiVersion)
	}
	if gvk.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("response kind %q, want CredentialProviderResponse", gvk.Kind)
	}
	obj, _, err := pluginCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("response of apiVersion %s does not decode (unknown or mistyped fields)", apiVersion)
	}
	var resp credentialproviderv1.CredentialProviderResponse
	if err := pluginScheme.Convert(obj, &resp, nil); err != nil {
		return nil, fmt.Errorf("converting response of apiVersion %s: %w", apiVersion, err)
	}
	return &resp, nil
}

// capped keeps the first max bytes written to it and counts the rest, so a
// plugin that writes too much is neither blocked nor kept whole; with max
// 0 it only counts.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(b []byte) (int, error) {
	keep := min(len(b), c.max-c.buf.Len())
	c.buf.Write(b[:keep])
	c.dropped += len(b) - keep
	return len(b), nil
}

func (c *capped) Bytes() []byte { return c.buf.Bytes() }
