// Command regcheck checks that the images your Kubernetes workloads use will
// still pull, and with the same bits. See `regcheck --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/regcheck/regcheck/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.RunAs(ctx, cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[0], os.Args[1:])
	stop()
	os.Exit(code)
}
