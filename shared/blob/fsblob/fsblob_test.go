package fsblob_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moku/sellerapi/shared/blob/blobtest"
	"github.com/moku/sellerapi/shared/blob/fsblob"
)

func TestContract(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media-root")
	blobtest.Run(t, fsblob.New(dir))
	// No temporary file is left beside the objects.
	entries, err := os.ReadDir(filepath.Join(dir, "media"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name()[0] == '.' {
			t.Errorf("left over: %s", e.Name())
		}
	}
}

func TestOpeningTouchesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	s := fsblob.New(dir)
	s.Head(t.Context(), "media/x.webp")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory created by a read: %v", err)
	}
}
