package s3registry

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a child process whose output goes to a log file.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{}
	logFile string
	log     *os.File
}

func (p *proc) start(logFile, binary string, args ...string) error {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", logFile, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", filepath.Base(binary), err)
	}
	p.cmd, p.log, p.logFile, p.done = cmd, f, logFile, make(chan struct{})
	go func() { cmd.Wait(); close(p.done) }()
	return nil
}

// exited is closed when the process has ended.
func (p *proc) exited() <-chan struct{} { return p.done }

// stop ends the process (SIGTERM, then SIGKILL after 5s) and waits for it.
func (p *proc) stop() error {
	if p.cmd == nil {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
	return p.log.Close()
}

// tail is the end of the process's log, for error messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logFile)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
