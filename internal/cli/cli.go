package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/internal/version"
)

// Exit codes are a contract with scripts and CI.
const (
	ExitClean      = 0 // nothing at or above --fail-on
	ExitFindings   = 1 // a finding at or above --fail-on
	ExitUsage      = 2 // bad flags, arguments or configuration
	ExitIncomplete = 3 // could not check everything; nothing at or above --fail-on found
)

// Streams are where a command reads and writes: results to Out, logs to Err.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code out of a command; its message, if any, is
// printed once by Run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as the user's to fix: exit code 2.
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// Version is regcheck's version (see package version).
var Version = version.String()

// globals are the flags every command shares.
type globals struct {
	logLevel       string
	quiet, verbose bool
	logger         *slog.Logger
	stderr         *statusLine // the logs' writer, shared with a progress line
}

// Run runs regcheck with args (without the program name) and returns the
// exit code. It prints an error once, to s.Err.
func Run(ctx context.Context, s Streams, args []string) int {
	return RunAs(ctx, s, "regcheck", args)
}

// RunAs is Run for a binary invoked as program (its os.Args[0]). Installed
// as a kubectl plugin, kubectl-regcheck, the help and usage lines read
// "kubectl regcheck …", as the user types it.
func RunAs(ctx context.Context, s Streams, program string, args []string) int {
	root := newRootCommand(s, &globals{})
	if name := pluginName(program); name != "" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	}
	root.SetArgs(args)

	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitClean
	}
	// Errors from a command's run carry their exit code (incompleteOnFailure);
	// what is left is cobra's own: an unknown command, bad arguments.
	code := ExitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	} else if ctx.Err() != nil {
		code = ExitIncomplete
	}
	// The message may carry a registry's words or a file's name: no
	// control character of theirs reaches the terminal.
	// Nor a password: every message goes through the one redaction rule
	// (a flag's value, a path, a URL quoted by a library).
	msg := printable.Text(redact.String(err.Error()))
	if !strings.HasPrefix(msg, "regcheck") {
		msg = "regcheck: " + msg
	}
	fmt.Fprintln(s.Err, msg)
	return code
}

// pluginName is the command line kubectl runs program as ("kubectl
// regcheck" for kubectl-regcheck, kubectl's rules: a dash separates words,
// an underscore is a dash), or "" when program is no kubectl plugin's name.
func pluginName(program string) string {
	base := filepath.Base(program)
	if ext := filepath.Ext(base); strings.EqualFold(ext, ".exe") {
		base = strings.TrimSuffix(base, ext)
	}
	name, ok := strings.CutPrefix(base, "kubectl-")
	if !ok || name == "" {
		return ""
	}
	return "kubectl " + strings.ReplaceAll(strings.ReplaceAll(name, "-", " "), "_", "-")
}

// incompleteOnFailure makes a command's run errors exit 3 unless they carry
// a code of their own: a cluster or registry that could not be read, a
// report that could not be written, mean the check is incomplete, not that
// the user typed something wrong. Cobra's argument checks still exit 2.
func incompleteOnFailure(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			var ee *exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return &exitError{code: ExitIncomplete, err: err}
		}
	}
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return usageError(err)
			}
			return nil
		}
	}
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print regcheck's version",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Fprintln(s.Out, version.Get()) },
	}
}
