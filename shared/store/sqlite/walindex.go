package sqlite

import "os"

// walIndex reads the header of a database's WAL index (the -shm file),
// which SQLite rewrites in every commit: two copies of the 48-byte
// WalIndexHdr at its start, the second written first
// (https://www.sqlite.org/walformat.html, "The WAL-Index Format"). Its
// counter iChange moves with every transaction committed, by any
// connection of any process, and its frame count and salts with every
// append to and restart of the log. So a header read twice alike means no
// commit finished between the two reads. It is read with pread, which
// sees what the processes that map the file wrote (one page cache): about
// a microsecond where the data-version statement costs several.
type walIndex struct {
	f *os.File
}

// walHeader is one copy of the WAL index's header.
type walHeader [48]byte

func (w *walIndex) open(path string) {
	if f, err := os.Open(path); err == nil {
		w.f = f
	}
}

func (w *walIndex) close() {
	if w.f != nil {
		w.f.Close()
	}
}

// header returns the header, or false when it cannot be read or its two
// copies differ (a commit is writing it).
func (w *walIndex) header() (walHeader, bool) {
	var h walHeader
	if w.f == nil {
		return h, false
	}
	var b [2 * len(walHeader{})]byte
	if _, err := w.f.ReadAt(b[:], 0); err != nil {
		return h, false
	}
	if [48]byte(b[:48]) != [48]byte(b[48:]) {
		return h, false
	}
	copy(h[:], b[:48])
	return h, true
}
