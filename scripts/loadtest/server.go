package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// server is the process under load and the command line that administers
// it (the same binary, on the same data directory).
type server struct {
	cli  string
	data string
	base string // http://127.0.0.1:port/v1
	cmd  *exec.Cmd
}

// start runs `cli serve` on a free loopback port with webhooks to loopback
// allowed, and waits for the line that names its base URL.
func start(ctx context.Context, cli, data string, more []string) (*server, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--allow-private-webhooks"}, more...)
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stderr = io.Discard
	if os.Getenv("LOADTEST_SERVER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &server{cli: cli, data: data, cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				select {
				case found <- strings.TrimSpace(url):
				default:
				}
			}
		}
	}()
	select {
	case s.base = <-found:
		return s, nil
	case <-time.After(3 * time.Minute):
		s.stop()
		return nil, fmt.Errorf("serve: no base URL within 3 minutes")
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
		}
	}
}

// admin runs one administrative command and decodes its data.
func (s *server) admin(ctx context.Context, v any, args ...string) error {
	args = append(args, "--data", s.data)
	out, err := exec.CommandContext(ctx, s.cli, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, stderr)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(out, &env); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return json.Unmarshal(env.Data, v)
}

// usage is the CPU time and resident memory of the server's process tree
// (the server and every process it started, such as the deployed shape's
// functions and emulators) at one moment.
type usage struct {
	cpu time.Duration
	rss int64 // bytes
}

// treeUsage reads /proc for root and its live descendants. The CPU of a
// descendant that exited in between is not counted (the figure errs low
// for the deployed shape, whose function processes stay warm).
func treeUsage(root int) usage {
	parent := map[int]int{}
	stats := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name may hold spaces; the fields after it are fixed.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 22 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		stats[pid] = f
	}
	const ticks = 100 // USER_HZ on Linux
	page := int64(os.Getpagesize())
	var u usage
	for pid, f := range stats {
		if !descends(pid, root, parent) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		rss, _ := strconv.ParseInt(f[21], 10, 64)
		u.cpu += time.Duration(ut+st) * time.Second / ticks
		u.rss += rss * page
	}
	return u
}

func descends(pid, root int, parent map[int]int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parent[pid]
	}
	return false
}
