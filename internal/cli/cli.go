package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/internal/version"
	"github.com/regcheck/regcheck/report"
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
	g := &globals{}
	root := &cobra.Command{
		Use:   "regcheck",
		Short: "Check that every image your pods use will still pull, with the same bits",
		Long: `regcheck answers one question for people who run Kubernetes: if this pod
restarts tonight, will it come back, and with the same bits?

It walks each image from its tag through the index and every child manifest
down to the config and layer blobs, and reports what a node could no longer
pull. It is read-only against registries and clusters.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := g.level()
			if err != nil {
				return usageError(err)
			}
			g.stderr = &statusLine{w: s.Err, width: termWidth(s.Err)}
			g.logger = slog.New(newLogHandler(g.stderr, lvl))
			return nil
		},
		Version: version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetArgs(args)
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log at debug level: each registry request with its method, URL, status and time (--log-level debug)")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress line, and only errors on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(newScanCmd(s, g), newPinCmd(s, g), newVersionCmd(s), newGCCheckCmd(s, g), newRecordCmd(s, g))
	root.AddCommand(newRescueCmd(s, g))
	for _, c := range root.Commands() {
		incompleteOnFailure(c)
	}

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
	msg := report.Printable(err.Error())
	if !strings.HasPrefix(msg, "regcheck") {
		msg = "regcheck: " + msg
	}
	fmt.Fprintln(s.Err, msg)
	return code
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
