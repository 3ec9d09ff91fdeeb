// Package media holds vendors' uploaded images: the rules of an upload
// (format, digest, size, one frame, megapixels), their canonical lossy WebP
// encoding, the vendor's admission budget and the media record.
//
// An object is content-addressed: its key is media/<SHA-256 of the
// canonical WebP>.webp, so identical pixels encoded once are one object
// whichever vendor uploaded them. A vendor's record is keyed by the SHA-256
// of the original bytes (the path's digest), so repeating an upload, with any
// token, returns the same record. Nothing here deletes anything.
//
// What does not live here: HTTP (shared/httpapi reads the body after the
// platform checks), object storage (shared/blob) and the decoding and
// re-encoding of pixels (media/canonical, over the VP8 encoder vp8enc),
// which the processes that take uploads wire in (Service.Encode).
package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// The contract's limits.
const (
	// MaxInputBytes bounds an upload's body.
	MaxInputBytes = 2 << 20
	// MaxOutputBytes bounds the canonical WebP.
	MaxOutputBytes = 2 << 20
	// MaxPixels bounds width x height, read from the header before decoding.
	MaxPixels = 16_000_000
	// DefaultBudgetBytes and DefaultBudgetObjects are a vendor's admission
	// budget.
	DefaultBudgetBytes   = 256 << 20
	DefaultBudgetObjects = 1000
	// Quality is the WebP quality of the canonical encoding (libwebp's
	// scale, quantizer index 17 of 127): a 2 MiB photo comes out near half
	// its size, with no visible loss at product-page sizes.
	Quality = 82
	// ContentType is the canonical encoding's type.
	ContentType = TypeWebP
)

// Record is a vendor's uploaded image, as the API shows it.
type Record struct {
	ID string `json:"id"`
	// SHA256 is the digest of the original upload: the path's digest.
	SHA256      string `json:"sha256"`
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	// Bytes is the size of the canonical WebP, SourceBytes of the upload.
	Bytes             int64     `json:"bytes"`
	SourceBytes       int64     `json:"source_bytes"`
	SourceContentType string    `json:"source_content_type"`
	CreatedAt         time.Time `json:"created_at"`
}

// Budget is a vendor's admission budget.
type Budget struct {
	Bytes   int64
	Objects int64
}

// Service uploads images.
type Service struct {
	Store store.Store
	// Blob is where canonical images go; nil means storage is not
	// configured and every upload fails closed with 503.
	Blob blob.Store
	// Encode makes the canonical WebP (media/canonical.Encode); nil, as
	// without Blob, fails every upload closed with 503.
	Encode Encoder
	Clock  clock.Clock
	// BaseURL is the public address objects are served under: a record's
	// url is BaseURL + "/" + key.
	BaseURL string
	Budget  Budget
	// Gate bounds the process's decodes; nil is a gate of
	// DefaultDecodeBudget and one slot.
	Gate *Gate
	// StoreTimeout bounds each phase of store and blob work (reading the
	// record, admitting, storing); decoding is outside it. Zero is 5 s.
	StoreTimeout time.Duration
	// DecodeWait bounds the wait for a turn at the gate; past it the
	// upload answers 503. Zero is 20 s.
	DecodeWait time.Duration
	// DecodeTimeout bounds decoding and re-encoding once the gate let the
	// upload in; past it the upload answers 503. Zero is DefaultDecodeTimeout.
	DecodeTimeout time.Duration
}

// DefaultDecodeTimeout bounds one decode and re-encode. The scan walk
// bounds a JPEG's work to about a second of one core and the pixel cap
// every format's, so a decode that runs longer is one slowed by a busy
// machine: the upload answers 503 (retry the same bytes) well before the
// media function's 15 s timeout.
const DefaultDecodeTimeout = 10 * time.Second

// Configured reports whether uploads can be stored.
func (s Service) Configured() bool { return s.Blob != nil && s.Encode != nil }

// errNotConfigured is the 503 of an upload without storage.
func errNotConfigured() error {
	return errs.Unavailablef(nil, "media storage is not configured for this deployment")
}

var digestPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidDigest checks the path's digest: 64 lowercase hex characters.
func ValidDigest(d string) error {
	if !digestPattern.MatchString(d) {
		if len(d) == 64 && strings.ToLower(d) != d {
			return invalid("sha256: must be lowercase hex")
		}
		return invalid("sha256: must be the 64-character lowercase hex SHA-256 of the body")
	}
	return nil
}

// AcceptedType reports whether a Content-Type (without parameters) may
// carry an upload.
func AcceptedType(t string) bool { return t == TypeJPEG || t == TypePNG || t == TypeWebP }

// Key is the object key of a canonical encoding.
func Key(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "media/" + hex.EncodeToString(sum[:]) + ".webp"
}

// doc is the stored record: pending from admission until the object is
// stored, then stored.
type doc struct {
	State string `json:"state"` // pending or stored
	// Charged is what the upload counts against the budget: its input size
	// when admitted, raised to the canonical size if that is larger.
	Charged int64  `json:"charged"`
	Key     string `json:"key,omitempty"`
	Record
}

const (
	statePending = "pending"
	stateStored  = "stored"
)

// Upload is one PUT of image bytes.
type Upload struct {
	VendorID    string
	SHA256      string
	ContentType string
	Body        []byte
}

// Put stores an upload and returns its record, in phases that each get
// their own bound: ctx should carry no store deadline, since decoding is
// CPU work that a store deadline must not cut short.
//
//  1. The digest and the header (format, frame, pixels, colour profile,
//     decoding cost) are checked: a wrong file costs nothing.
//  2. The vendor's record and budget are read (store deadline): a stored
//     record is the answer; an upload the budget cannot admit is 409
//     before any decoding.
//  3. The pixels are decoded and re-encoded, once the process's decode gate
//     has room for the header's cost estimate (no store deadline; the wait
//     for the gate is bounded by DecodeWait). A file that fails here
//     (truncated, corrupt, too large once encoded) has been charged
//     nothing.
//  4. The upload is admitted against the budget (store deadline): the
//     pending record and the counter move in one transaction. From here a
//     failure keeps the admission, and a retry of the same bytes reuses it.
//  5. The object is stored and the record marked stored (store deadline).
func (s Service) Put(ctx context.Context, u Upload) (Record, error) {
	if !s.Configured() {
		return Record{}, errNotConfigured()
	}
	if err := ValidDigest(u.SHA256); err != nil {
		return Record{}, err
	}
	if sum := sha256.Sum256(u.Body); hex.EncodeToString(sum[:]) != u.SHA256 {
		return Record{}, invalid("sha256: the path digest is not the SHA-256 of the body (%d bytes)", len(u.Body))
	}
	h, err := Inspect(u.Body, u.ContentType, MaxPixels)
	if err != nil {
		return Record{}, err
	}
	gate := s.gate()
	if h.Cost > gate.Budget() {
		return Record{}, tooCostly(h, gate.Budget())
	}
	sctx, cancel := s.storeCtx(ctx)
	items, err := s.Store.GetMany(sctx, []store.Key{datamodel.MediaKey(u.VendorID, u.SHA256), datamodel.MediaBudgetKey(u.VendorID)})
	cancel()
	if err != nil {
		return Record{}, errs.Unavailablef(err, "the media budget could not be read")
	}
	d, version, found, err := recorded(items[0])
	if err != nil {
		return Record{}, err
	}
	if found && d.State == stateStored {
		return s.view(d), nil
	}
	size := int64(len(u.Body))
	if used := items[1].Nums; !found && (used[datamodel.MediaBytesAttr]+size > s.Budget.Bytes || used[datamodel.MediaObjectsAttr]+1 > s.Budget.Objects) {
		return Record{}, s.overBudget(used[datamodel.MediaBytesAttr], used[datamodel.MediaObjectsAttr], size)
	}
	c, err := s.canonicalize(ctx, u.VendorID, u.Body, h)
	if err != nil {
		return Record{}, err
	}
	if !found {
		sctx, cancel := s.storeCtx(ctx)
		d, version, err = s.admit(sctx, u, items)
		cancel()
		if err != nil {
			return Record{}, err
		}
		if d.State == stateStored {
			return s.view(d), nil
		}
	}
	sctx, cancel = s.storeCtx(ctx)
	defer cancel()
	key := Key(c.Data)
	if err := s.Blob.Put(sctx, key, c.Data, ContentType); err != nil {
		return Record{}, errs.Unavailablef(err, "the image could not be stored; retry the same bytes")
	}
	return s.finish(sctx, u, d, version, key, c)
}

func (s Service) gate() *Gate {
	if s.Gate != nil {
		return s.Gate
	}
	return NewGate(DefaultDecodeBudget, 1)
}

func (s Service) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := s.StoreTimeout
	if t <= 0 {
		t = 5 * time.Second
	}
	return context.WithTimeout(ctx, t)
}

// canonicalize decodes and re-encodes the upload within the gate, as the
// upload's vendor (the gate's tenant), for at most DecodeTimeout.
//
// A Go decoder cannot be interrupted from outside, so the decode runs in
// its own goroutine, which holds the gate's room until it ends: the upload
// answers 503 at the deadline, and the room (memory, a slot, the vendor's
// share of the slots) stays taken while the CPU and the memory are. The
// Encoder is given a context that ends at the deadline, and stops at its
// next read of the bytes (media/canonical); what remains of a decode past
// the deadline is what runs between two reads, bounded by the scan walk.
// A vendor whose decodes outlast their deadline waits for its own share;
// other vendors' uploads take the other slots.
func (s Service) canonicalize(ctx context.Context, vendor string, b []byte, h Header) (Canonical, error) {
	wait := s.DecodeWait
	if wait <= 0 {
		wait = 20 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	release, err := s.gate().Acquire(wctx, vendor, h.Cost)
	cancel()
	if err != nil {
		// The cause is not the context's error: the HTTP layer would take a
		// deadline for a store timeout and say so instead.
		return Canonical{}, errs.Unavailablef(fmt.Errorf("%w: %v", errGateWait, err), "the service is decoding other images; retry the same bytes shortly")
	}
	limit := s.DecodeTimeout
	if limit <= 0 {
		limit = DefaultDecodeTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	type result struct {
		c   Canonical
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer release()
		var r result
		defer func() {
			// Off the request's goroutine, a decoder's panic would end the
			// process. The bytes made the decoder fail: a decode failure,
			// 400 INVALID_MEDIA as the contract has it.
			if p := recover(); p != nil {
				r = result{err: errs.Wrap(errs.CodeInvalidMedia, "body: the image cannot be decoded (the decoder failed on it)", fmt.Errorf("media: the decoder panicked: %v", p))}
			}
			done <- r
		}()
		r.c, r.err = s.Encode(dctx, b, h, Quality, MaxOutputBytes)
	}()
	select {
	case r := <-done:
		if r.err != nil && dctx.Err() != nil && errors.Is(r.err, dctx.Err()) {
			return Canonical{}, errDecodeTimeout(limit, dctx.Err())
		}
		return r.c, r.err
	case <-dctx.Done():
		return Canonical{}, errDecodeTimeout(limit, dctx.Err())
	}
}

// The causes of the decode phase's 503s, for the logs.
var (
	errGateWait      = errors.New("media: no turn at the decode gate in time")
	errDecodeOverran = errors.New("media: the decode ran past its deadline")
)

func errDecodeTimeout(limit time.Duration, cause error) error {
	return errs.Unavailablef(fmt.Errorf("%w (%s: %v)", errDecodeOverran, limit, cause),
		"decoding the image took longer than %s; the service is busy. Retry the same bytes shortly", limit)
}

// tooCostly is the 413 of an image whose decoding would take more memory
// than one decode may.
func tooCostly(h Header, budget int64) error {
	how := "fewer pixels"
	if len(h.Traits) > 0 {
		how = "fewer pixels, or without what makes it costly (" + strings.Join(h.Traits, ", ") + "): 8-bit samples, not interlaced, baseline (not progressive), RGB (not CMYK)"
	}
	kind := ""
	if len(h.Traits) > 0 {
		kind = " (" + strings.Join(h.Traits, ", ") + ")"
	}
	return errs.Ef(errs.CodeMediaTooLarge,
		"body: decoding this %dx%d image%s would take about %d MiB of memory; at most %d MiB is available to one image. Save it with %s and upload again",
		h.Width, h.Height, kind, (h.Cost+(1<<20)-1)>>20, budget>>20, how)
}

// recorded reads the vendor's record for a digest, if there is one.
func recorded(it store.Item) (doc, int64, bool, error) {
	if it.PK == "" {
		return doc{}, 0, false, nil
	}
	var d doc
	if err := json.Unmarshal(it.Data, &d); err != nil {
		return doc{}, 0, false, fmt.Errorf("media: record %s: %w", it.SK, err)
	}
	return d, it.Version, true, nil
}

// admit admits the upload against the budget, starting from items (the
// record, absent, and the budget counter as just read): the record
// (pending) and the counter move in one transaction, the counter's bounds
// keeping the budget under concurrency. A record that appeared meanwhile
// (a concurrent upload of the same bytes) is returned instead.
func (s Service) admit(ctx context.Context, u Upload, items []store.Item) (doc, int64, error) {
	rk, bk := datamodel.MediaKey(u.VendorID, u.SHA256), datamodel.MediaBudgetKey(u.VendorID)
	size := int64(len(u.Body))
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			var err error
			if items, err = s.Store.GetMany(ctx, []store.Key{rk, bk}); err != nil {
				return doc{}, 0, errs.Unavailablef(err, "the media budget could not be read")
			}
		}
		if d, version, found, err := recorded(items[0]); err != nil || found {
			return d, version, err
		}
		used := items[1].Nums
		if used[datamodel.MediaBytesAttr]+size > s.Budget.Bytes || used[datamodel.MediaObjectsAttr]+1 > s.Budget.Objects {
			return doc{}, 0, s.overBudget(used[datamodel.MediaBytesAttr], used[datamodel.MediaObjectsAttr], size)
		}
		d := doc{State: statePending, Charged: size, Record: Record{
			ID: ids.New("med"), SHA256: u.SHA256, ContentType: ContentType,
			SourceBytes: size, SourceContentType: u.ContentType,
		}}
		data, err := json.Marshal(d)
		if err != nil {
			return doc{}, 0, err
		}
		var charge store.Op
		if items[1].PK == "" {
			charge = store.Put(store.Item{PK: bk.PK, SK: bk.SK, Version: 1, Data: []byte("{}"),
				Nums: map[string]int64{datamodel.MediaBytesAttr: size, datamodel.MediaObjectsAttr: 1}}, store.IfAbsent())
		} else {
			charge = store.Add(bk, map[string]int64{datamodel.MediaBytesAttr: size, datamodel.MediaObjectsAttr: 1}, 0, store.Cond{Bounds: []store.Bound{
				{Attr: datamodel.MediaBytesAttr, Cmp: store.LE, Value: s.Budget.Bytes - size},
				{Attr: datamodel.MediaObjectsAttr, Cmp: store.LE, Value: s.Budget.Objects - 1},
			}})
		}
		err = s.Store.Transact(ctx, store.Put(store.Item{PK: rk.PK, SK: rk.SK, Version: 1, Data: data}, store.IfAbsent()), charge)
		if err == nil {
			return d, 1, nil
		}
		if !store.IsCondition(err) {
			return doc{}, 0, errs.Unavailablef(err, "the upload could not be admitted")
		}
		// A concurrent upload admitted these bytes or moved the counter:
		// read again and decide on what is there now.
	}
	return doc{}, 0, errs.Unavailablef(errors.New("media: admission contended"), "the upload could not be admitted; retry the same bytes")
}

func (s Service) overBudget(bytes, objects, size int64) error {
	return errs.Ef(errs.CodeMediaQuotaExceeded,
		"the vendor's media budget (%d bytes, %d objects, pending uploads included) cannot admit %d more bytes: %d bytes and %d objects are admitted. "+
			"Images are never deleted, so retrying will not help: ask an operator to review the budget.",
		s.Budget.Bytes, s.Budget.Objects, size, bytes, objects)
}

// finish marks the record stored. When the canonical encoding is larger
// than the admitted input, the difference is charged too, within the
// budget. A concurrent upload of the same bytes may finish first: its
// record is the answer.
func (s Service) finish(ctx context.Context, u Upload, d doc, version int64, key string, c Canonical) (Record, error) {
	d.State, d.Key = stateStored, key
	d.Width, d.Height, d.Bytes = c.Width, c.Height, int64(len(c.Data))
	d.CreatedAt = s.Clock.Now().UTC().Truncate(time.Second)
	extra := d.Bytes - d.Charged
	if extra > 0 {
		d.Charged = d.Bytes
	}
	data, err := json.Marshal(d)
	if err != nil {
		return Record{}, err
	}
	rk := datamodel.MediaKey(u.VendorID, u.SHA256)
	ops := []store.Op{store.Put(store.Item{PK: rk.PK, SK: rk.SK, Version: version + 1, Data: data}, store.IfVersion(version))}
	if extra > 0 {
		ops = append(ops, store.Add(datamodel.MediaBudgetKey(u.VendorID), map[string]int64{datamodel.MediaBytesAttr: extra}, 0, store.Cond{Bounds: []store.Bound{
			{Attr: datamodel.MediaBytesAttr, Cmp: store.LE, Value: s.Budget.Bytes - extra},
		}}))
	}
	err = s.Store.Transact(ctx, ops...)
	if err == nil {
		return s.view(d), nil
	}
	if !store.IsCondition(err) {
		return Record{}, errs.Unavailablef(err, "the media record could not be written; retry the same bytes")
	}
	it, gerr := s.Store.Get(ctx, rk)
	if gerr != nil {
		return Record{}, errs.Unavailablef(gerr, "the media record could not be read")
	}
	var now doc
	if err := json.Unmarshal(it.Data, &now); err != nil {
		return Record{}, fmt.Errorf("media: record %s: %w", rk.SK, err)
	}
	if now.State == stateStored {
		return s.view(now), nil
	}
	// Still pending: the charge for the larger encoding did not fit.
	return Record{}, errs.Ef(errs.CodeMediaQuotaExceeded,
		"the canonical WebP (%d bytes) is larger than the upload and the vendor's media budget (%d bytes) cannot admit the %d bytes more. "+
			"Images are never deleted, so retrying will not help: ask an operator to review the budget.",
		d.Bytes, s.Budget.Bytes, extra)
}

// view is the record as the API shows it.
func (s Service) view(d doc) Record {
	r := d.Record
	r.URL = strings.TrimRight(s.BaseURL, "/") + "/" + d.Key
	return r
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
