package jobrun

import "slices"

// Pending is a record's status until the job settles it, in every kind.
const Pending = "pending"

// Row is a pointer to a job's record of type R.
type Row[R any] interface {
	*R
	// Progress is the record's status and its count of attempts that
	// failed for reasons of the service, to read and to move.
	Progress() (status *string, attempts *int)
}

// Rows are a job's records. A job type embeds them (through an alias that
// names the field, with the field's JSON name in its tag), so that the
// runner reads and moves its records without the job saying how.
type Rows[R any, P Row[R]] []R

// Len is the number of records.
func (rs Rows[R, P]) Len() int { return len(rs) }

// Next is the index of the first pending record, or -1.
func (rs Rows[R, P]) Next() int {
	for i := range rs {
		if st, _ := P(&rs[i]).Progress(); *st == Pending {
			return i
		}
	}
	return -1
}

// Attempts is record i's count of failed attempts.
func (rs Rows[R, P]) Attempts(i int) *int {
	_, n := P(&rs[i]).Progress()
	return n
}

// Clone copies the records, for a change that must not touch the job it
// was made from.
func (rs Rows[R, P]) Clone() Rows[R, P] { return slices.Clone(rs) }

// Tally counts the records per status.
func (rs Rows[R, P]) Tally() map[string]int {
	n := make(map[string]int, 8)
	for i := range rs {
		st, _ := P(&rs[i]).Progress()
		n[*st]++
	}
	return n
}
