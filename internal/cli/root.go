package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/internal/version"
)

// NewRootCommand returns regcheck's root command with every subcommand,
// the one Run executes, without running it: for the reference that
// hack/docs generates into docs/cli. Its commands read and write s.
func NewRootCommand(s Streams) *cobra.Command {
	return newRootCommand(s, &globals{})
}

// NewReferenceRoot is the root command the command reference (docs/cli)
// is generated from: NewRootCommand with what Execute adds (the --version
// flag, the completion command), and no dated "Auto generated" line on any
// command, so that the pages change only with the commands.
func NewReferenceRoot(s Streams) *cobra.Command {
	r := NewRootCommand(s)
	r.InitDefaultVersionFlag()
	r.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(r)
	return r
}

// newRootCommand builds the root command over g, the flags every command
// shares: the one Run executes and hack/docs documents.
func newRootCommand(s Streams, g *globals) *cobra.Command {
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
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log at debug level: each registry request with its method, URL, status and time (--log-level debug)")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress line, and only errors on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(newScanCmd(s, g), newPinCmd(s, g), newVersionCmd(s), newGCCheckCmd(s, g), newRecordCmd(s, g))
	root.AddCommand(newRescueCmd(s, g), newProtectCmd(s, g))
	root.AddCommand(newWatchCmd(s, g))
	for _, c := range root.Commands() {
		incompleteOnFailure(c)
	}
	return root
}
