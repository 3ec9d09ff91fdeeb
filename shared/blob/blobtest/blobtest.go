// Package blobtest is the contract every adapter of the blob port passes.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/blob"
)

// Run checks s against the port's contract. s must be empty.
func Run(t *testing.T, s blob.Store) {
	ctx := context.Background()
	t.Run("absent", func(t *testing.T) {
		if _, err := s.Head(ctx, "media/absent.webp"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Head = %v, want ErrNotFound", err)
		}
		if _, _, err := s.Get(ctx, "media/absent.webp"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
	})
	t.Run("put then read", func(t *testing.T) {
		data := []byte("RIFF\x04\x00\x00\x00WEBP")
		if err := s.Put(ctx, "media/a.webp", data, "image/webp"); err != nil {
			t.Fatal(err)
		}
		info, err := s.Head(ctx, "media/a.webp")
		if err != nil || info.Size != int64(len(data)) || info.ContentType != "image/webp" {
			t.Fatalf("Head = %+v, %v", info, err)
		}
		rc, info, err := s.Get(ctx, "media/a.webp")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, data) || info.Size != int64(len(data)) || info.ContentType != "image/webp" {
			t.Fatalf("Get = %q %+v", got, info)
		}
	})
	t.Run("an existing key is kept", func(t *testing.T) {
		if err := s.Put(ctx, "media/b.webp", []byte("first"), "image/webp"); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "media/b.webp", []byte("second!"), "image/webp"); err != nil {
			t.Fatalf("second Put = %v, want success without writing", err)
		}
		rc, _, err := s.Get(ctx, "media/b.webp")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "first" {
			t.Fatalf("object = %q, want the first write", got)
		}
	})
	t.Run("concurrent writers of one key", func(t *testing.T) {
		data := bytes.Repeat([]byte{7}, 64<<10)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.Put(ctx, "media/c.webp", data, "image/webp")
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if info, err := s.Head(ctx, "media/c.webp"); err != nil || info.Size != int64(len(data)) {
			t.Fatalf("Head = %+v, %v", info, err)
		}
	})
	t.Run("invalid keys", func(t *testing.T) {
		for _, k := range []string{"", "../x", "media/../x", "/abs", "media//x", "Media/X", "media/.hidden"} {
			if err := s.Put(ctx, k, []byte("x"), "image/webp"); err == nil {
				t.Errorf("Put(%q) succeeded", k)
			}
		}
	})
}
