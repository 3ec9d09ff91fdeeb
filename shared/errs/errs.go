// Package errs is the service's one error type: a kind that the HTTP layer
// maps to a status, a stable machine code from the catalog, and a detail for
// humans. Domain code returns errs.E(...) and never writes a status code.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error; the HTTP layer maps each kind to one status.
type Kind int

const (
	Internal         Kind = iota // a bug or an unexpected failure: 500, no details leak
	Invalid                      // the request is malformed or breaks a rule: 400
	Unauthenticated              // no valid credential: 401
	Forbidden                    // the credential lacks a scope: 403
	NotFound                     // absent or not granted: 404
	MethodNotAllowed             // the path exists, the method does not: 405
	Conflict                     // version, idempotency, state or authority conflict: 409
	TooLarge                     // an upload above its limit: 413
	RateLimited                  // the vendor's window is spent: 429
	Unavailable                  // state could not be checked safely: 503
)

// Error is the error every layer passes up.
type Error struct {
	Kind   Kind
	Code   Code
	Detail string
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
	// Err is the underlying cause, logged but never shown to clients.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error for a catalog code; its kind comes from the catalog.
func E(code Code, detail string) *Error {
	return &Error{Kind: code.Kind(), Code: code, Detail: detail}
}

// Ef is E with a formatted detail.
func Ef(code Code, format string, args ...any) *Error {
	return E(code, fmt.Sprintf(format, args...))
}

// Wrap builds an error for code that keeps cause for the logs.
func Wrap(code Code, detail string, cause error) *Error {
	e := E(code, detail)
	e.Err = cause
	return e
}

// Unavailablef reports state that could not be checked safely; the service
// fails closed with 503 and asks the client to retry after a short pause.
func Unavailablef(cause error, format string, args ...any) *Error {
	e := Ef(CodeServiceUnavailable, format, args...)
	e.Err = cause
	e.RetryAfter = 1
	return e
}

// Absent is the not found of a record the caller cannot see, named as a
// client calls it ("listing"): "listing not found".
func Absent(record string) error { return E(CodeNotFound, record+" not found") }

// Record is how a package's errors name its records, written once: Name
// as a client calls a record ("listing"), and Unreadable, the detail of a
// read of them that failed ("listing state could not be read safely").
// The details differ between packages and a client may match them, so
// each keeps its own.
type Record struct {
	Name       string
	Unreadable string
}

// NotFound is Absent(r.Name): "listing not found".
func (r Record) NotFound() error { return Absent(r.Name) }

// Unavailable is the 503 of a read of r's records that failed for cause
// (see Unavailablef).
func (r Record) Unavailable(cause error) error { return Unavailablef(cause, "%s", r.Unreadable) }

// StaleVersion is the conflict, of the record's code, of a write whose
// expected_version is not the record's current version.
func StaleVersion(code Code, record string, current int64) error {
	return Ef(code, "expected_version: the %s is at version %d; read it again and retry", record, current)
}

// ForeignCursor is the error of a list position after, read from a
// client's cursor, that does not lie under prefix, the sort-key prefix of
// the list it was given to: a cursor of another list. Nil when it lies
// under prefix or is "" (the first page).
func ForeignCursor(after, prefix string) error {
	if after == "" || strings.HasPrefix(after, prefix) {
		return nil
	}
	return E(CodeInvalidCursor, "page_after: the cursor is not for this list")
}

// Raced explains a conditioned write that lost a race on a record it
// expected at version expected. read reads the record again with its
// version: a read that fails gives its own error, a record at another
// version is stale(current) (the client's copy is out of date), and one
// still at expected lost to a change elsewhere, which elsewhere explains
// from the record.
func Raced[T any](read func() (T, int64, error), expected int64, stale func(current int64) error, elsewhere func(T) error) error {
	cur, v, err := read()
	if err != nil {
		return err
	}
	if v != expected {
		return stale(v)
	}
	return elsewhere(cur)
}

// As returns the *Error in err's chain, or an Internal error wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Code: CodeInternal, Detail: "An unexpected error occurred.", Err: err}
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
