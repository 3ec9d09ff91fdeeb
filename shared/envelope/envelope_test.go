package envelope_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/envelope"
)

func TestSealOpenBindsAAD(t *testing.T) {
	ctx := context.Background()
	src, err := envelope.NewLocal(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	box := envelope.New(src)
	s, err := box.Seal(ctx, []byte("whsec_abc"), []byte("VENDOR#v/WHSUB#1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(ctx, s, []byte("VENDOR#v/WHSUB#1")); err != nil || string(got) != "whsec_abc" {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := box.Open(ctx, s, []byte("VENDOR#v/WHSUB#2")); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("open bound to another item: %v, want ErrOpen", err)
	}
	altered := s
	altered.Data = bytes.Clone(s.Data)
	altered.Data[0] ^= 1
	if _, err := box.Open(ctx, altered, []byte("VENDOR#v/WHSUB#1")); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("open altered: %v, want ErrOpen", err)
	}
	other, _ := envelope.NewLocal(bytes.Repeat([]byte{8}, 32))
	if _, err := envelope.New(other).Open(ctx, s, []byte("VENDOR#v/WHSUB#1")); err == nil {
		t.Fatal("a value sealed under one master key opened under another")
	}
}

// Processes pointed at one key file share its master key, even when they
// create it at the same moment.
func TestKeyFileSharedByProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys", "master.key")
	boxes := make([]*envelope.Box, 8)
	sealed := make([]envelope.Sealed, len(boxes))
	var wg sync.WaitGroup
	errs := make([]error, len(boxes))
	for i := range boxes {
		boxes[i] = envelope.New(envelope.NewKeyFile(path))
		wg.Go(func() { sealed[i], errs[i] = boxes[i].Seal(ctx, []byte("secret"), nil) })
	}
	wg.Wait()
	for i := range boxes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for j := range boxes {
			if got, err := boxes[j].Open(ctx, sealed[i], nil); err != nil || string(got) != "secret" {
				t.Fatalf("box %d opening box %d's value: %q, %v", j, i, got, err)
			}
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("key file: mode %v, %d bytes; want 0600, 32", fi.Mode().Perm(), fi.Size())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("key directory holds %d entries, want the key file alone", len(entries))
	}
}

func TestKeyFileUnusableIsAnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := envelope.New(envelope.NewKeyFile(path)).Seal(context.Background(), []byte("x"), nil); err == nil {
		t.Fatal("a 5-byte master key was used")
	}
}

// Opening with no key file fails, and makes none.
func TestKeyFileIsNotMadeToOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := envelope.New(envelope.NewKeyFile(filepath.Join(dir, "a.key"))).Seal(ctx, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "b.key")
	if _, err := envelope.New(envelope.NewKeyFile(missing)).Open(ctx, s, nil); err == nil {
		t.Fatal("opened without the key file")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("opening made a key file")
	}
}
