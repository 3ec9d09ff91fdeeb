package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/image/webp"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/blob/fsblob"
	"github.com/moku/sellerapi/shared/blob/s3blob/s3test"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/mediatest"
	"github.com/moku/sellerapi/shared/store"
)

// blobKinds are the media stores the HTTP suites run on.
var blobKinds = []string{"fs", "s3"}

func openBlob(t testing.TB, kind string) blob.Store {
	if kind == "s3" {
		return s3test.New(t)
	}
	return fsblob.New(t.TempDir())
}

// forEachMediaStore runs a test on every store and media store pair.
func forEachMediaStore(t *testing.T, fn func(t *testing.T, kind apitest.StoreKind, bk string)) {
	for _, kind := range apitest.Stores() {
		for _, bk := range blobKinds {
			t.Run(string(kind)+"/"+bk, func(t *testing.T) { fn(t, kind, bk) })
		}
	}
}

type mediaOpts struct {
	budgetBytes, budgetObjects int64
}

func mediaEnv(t testing.TB, kind apitest.StoreKind, b blob.Store, o mediaOpts) *apitest.Env {
	return apitest.New(t, apitest.Options{Store: kind, Blob: b, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		if o.budgetBytes > 0 {
			c.MediaBudgetBytes = o.budgetBytes
		}
		if o.budgetObjects > 0 {
			c.MediaBudgetObjects = o.budgetObjects
		}
	}})
}

// upload PUTs body at its own digest with the given content type.
func upload(e *apitest.Env, token, contentType string, body []byte) *apitest.Resp {
	return uploadAt(e, token, contentType, mediatest.Digest(body), body)
}

func uploadAt(e *apitest.Env, token, contentType, digest string, body []byte) *apitest.Resp {
	h := map[string]string{}
	if contentType != "" {
		h["Content-Type"] = contentType
	}
	return e.Do(apitest.Req{Method: http.MethodPut, Path: "/vendors/" + e.Vendor.ID + "/media/" + digest, Token: token, Body: body, Headers: h})
}

type mediaRecord struct {
	ID                string `json:"id"`
	SHA256            string `json:"sha256"`
	URL               string `json:"url"`
	ContentType       string `json:"content_type"`
	Width             int    `json:"width"`
	Height            int    `json:"height"`
	Bytes             int64  `json:"bytes"`
	SourceBytes       int64  `json:"source_bytes"`
	SourceContentType string `json:"source_content_type"`
	CreatedAt         string `json:"created_at"`
}

func wantRecord(t testing.TB, r *apitest.Resp) mediaRecord {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.Status, r.Body)
	}
	var raw struct {
		Data map[string]any `json:"data"`
	}
	r.JSON(t, &raw)
	if len(raw.Data) != 10 {
		t.Errorf("record has fields %v, want the 10 of MediaRecord", raw.Data)
	}
	var body struct {
		Data mediaRecord `json:"data"`
	}
	r.JSON(t, &body)
	return body.Data
}

// fetch GETs a record's url from the test server and decodes it.
func fetch(t testing.TB, e *apitest.Env, rec mediaRecord) ([]byte, image.Image) {
	t.Helper()
	const base = "http://api.test/v1"
	if !strings.HasPrefix(rec.URL, base+"/media/") {
		t.Fatalf("url %q is not under %s/media/", rec.URL, base)
	}
	r := e.Do(apitest.Req{Path: strings.TrimPrefix(rec.URL, base)})
	if r.Status != 200 || r.Header.Get("Content-Type") != "image/webp" || !strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("GET %s = %d %v", rec.URL, r.Status, r.Header)
	}
	m, err := webp.Decode(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("the stored object is not WebP: %v", err)
	}
	return r.Body, m
}

func TestMediaUpload(t *testing.T) {
	photo := mediatest.Photo(320, 200, 4, 1)
	files := []struct {
		name, contentType string
		body              []byte
	}{
		{"jpeg", media.TypeJPEG, mediatest.JPEG(photo, 90)},
		{"png", media.TypePNG, mediatest.PNG(mediatest.Photo(97, 31, 3, 2))},
		{"webp", media.TypeWebP, mediatest.WebP(mediatest.Photo(64, 48, 3, 3), 90)},
	}
	forEachMediaStore(t, func(t *testing.T, kind apitest.StoreKind, bk string) {
		e := mediaEnv(t, kind, openBlob(t, bk), mediaOpts{})
		for _, f := range files {
			t.Run(f.name, func(t *testing.T) {
				rec := wantRecord(t, upload(e, e.Token, f.contentType+"; charset=binary", f.body))
				src, _, _ := image.DecodeConfig(bytes.NewReader(f.body))
				if f.contentType == media.TypeWebP {
					src, _ = webp.DecodeConfig(bytes.NewReader(f.body))
				}
				if !strings.HasPrefix(rec.ID, "med_") || rec.SHA256 != mediatest.Digest(f.body) || rec.ContentType != "image/webp" ||
					rec.Width != src.Width || rec.Height != src.Height || rec.SourceBytes != int64(len(f.body)) ||
					rec.SourceContentType != f.contentType || rec.CreatedAt == "" {
					t.Fatalf("record %+v", rec)
				}
				obj, m := fetch(t, e, rec)
				if int64(len(obj)) != rec.Bytes || m.Bounds().Dx() != rec.Width || m.Bounds().Dy() != rec.Height {
					t.Fatalf("object of %d bytes, %v; record says %d bytes, %dx%d", len(obj), m.Bounds(), rec.Bytes, rec.Width, rec.Height)
				}
				if !strings.HasSuffix(rec.URL, "/media/"+mediatest.Digest(obj)+".webp") {
					t.Errorf("url %s is not named by the object's digest", rec.URL)
				}
				if bytes.Contains(obj, []byte("EXIF")) || bytes.Contains(obj, []byte("XMP ")) || bytes.Contains(obj, []byte("ICCP")) {
					t.Error("the canonical file carries metadata")
				}
				// Repeated content is idempotent across tokens.
				other := e.NewToken(e.Vendor.ID, auth.ProductsWrite)
				e.Clock.Advance(time.Hour)
				if again := wantRecord(t, upload(e, other, f.contentType, f.body)); again != rec {
					t.Errorf("repeat = %+v, want %+v", again, rec)
				}
			})
		}
		// The url is accepted as a product image.
		rec := wantRecord(t, upload(e, e.Token, media.TypeJPEG, files[0].body))
		product := simpleProduct("linen-shirt")
		product["image_urls"] = []string{rec.URL}
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/products", Token: e.Token,
			Headers: map[string]string{"Idempotency-Key": "media-product-1"}, Body: product})
		if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), rec.URL) {
			t.Fatalf("product with the media url: %d %s", r.Status, r.Body)
		}
		// Another vendor's upload of the same bytes is its own record, on
		// the same object.
		ov, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other-media")
		if err != nil {
			t.Fatal(err)
		}
		otherTok := e.NewToken(ov.ID, auth.ProductsWrite)
		r = e.Do(apitest.Req{Method: http.MethodPut, Path: "/vendors/" + ov.ID + "/media/" + rec.SHA256, Token: otherTok,
			Body: files[0].body, Headers: map[string]string{"Content-Type": media.TypeJPEG}})
		theirs := wantRecord(t, r)
		if theirs.ID == rec.ID || theirs.URL != rec.URL {
			t.Errorf("other vendor's record %+v; want its own id and the same url as %+v", theirs, rec)
		}
	})
}

func TestMediaObjectRoute(t *testing.T) {
	e := mediaEnv(t, apitest.SQLite, fsblob.New(t.TempDir()), mediaOpts{})
	rec := wantRecord(t, upload(e, e.Token, media.TypePNG, mediatest.PNG(mediatest.Photo(40, 30, 2, 4))))
	path := strings.TrimPrefix(rec.URL, "http://api.test/v1")
	r := e.Do(apitest.Req{Path: path})
	etag := r.Header.Get("ETag")
	if etag == "" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", r.Header)
	}
	if r := e.Do(apitest.Req{Path: path, Headers: map[string]string{"If-None-Match": etag}}); r.Status != http.StatusNotModified || len(r.Body) != 0 {
		t.Fatalf("conditional GET = %d", r.Status)
	}
	e.Do(apitest.Req{Path: "/media/" + strings.Repeat("0", 64) + ".webp"}).WantProblem(t, 404, "NOT_FOUND")
	// A path that decodes to "..": refused as not canonical, nothing served.
	e.Do(apitest.Req{Path: "/media/..%2Fstore.db"}).WantProblem(t, 400, "INVALID_REQUEST")
	// Upper-case hex is not a name the service gives (the document's pattern).
	e.Do(apitest.Req{Path: "/media/" + strings.Repeat("A", 64) + ".webp"}).WantProblem(t, 400, "INVALID_PARAMETER")
}

func TestMediaRejects(t *testing.T) {
	e := mediaEnv(t, apitest.SQLite, fsblob.New(t.TempDir()), mediaOpts{})
	good := mediatest.JPEG(mediatest.Photo(64, 48, 3, 5), 90)
	pngData := mediatest.PNG(mediatest.Photo(64, 48, 3, 6))
	for _, tc := range []struct {
		name, contentType, digest string
		body                      []byte
		status                    int
		code, detail              string
	}{
		{"json", "application/json", "", []byte(`{"url":"https://example.com/a.jpg"}`), 400, "INVALID_MEDIA", "Content-Type"},
		{"multipart", "multipart/form-data; boundary=x", "", []byte("--x\r\n\r\n--x--"), 400, "INVALID_MEDIA", "Content-Type"},
		{"text", "text/plain", "", []byte("https://example.com/a.jpg"), 400, "INVALID_MEDIA", "Content-Type"},
		{"no content type", "", "", good, 400, "INVALID_MEDIA", "Content-Type"},
		{"gif", "image/gif", "", mediatest.AnimatedGIF(), 400, "INVALID_MEDIA", "Content-Type"},
		{"base64 as png", "image/png", "", []byte(base64.StdEncoding.EncodeToString(pngData)), 400, "INVALID_MEDIA", "not a JPEG, PNG or WebP"},
		{"a url as jpeg", "image/jpeg", "", []byte("https://example.com/a.jpg"), 400, "INVALID_MEDIA", "not a JPEG, PNG or WebP"},
		{"gif as png", "image/png", "", mediatest.AnimatedGIF(), 400, "INVALID_MEDIA", "image/gif"},
		{"png as jpeg", "image/jpeg", "", pngData, 400, "INVALID_MEDIA", "the bytes are image/png"},
		{"digest mismatch", "image/jpeg", mediatest.Digest(pngData), good, 400, "INVALID_MEDIA", "not the SHA-256"},
		{"uppercase digest", "image/jpeg", strings.ToUpper(mediatest.Digest(good)), good, 400, "INVALID_MEDIA", "lowercase"},
		{"short digest", "image/jpeg", "abc123", good, 400, "INVALID_MEDIA", "{64}"},
		{"truncated header", "image/jpeg", "", good[:20], 400, "INVALID_MEDIA", "header"},
		{"too many megapixels", "image/png", "", mediatest.PNGHeader(4001, 4000), 400, "INVALID_MEDIA", "megapixels"},
		{"too wide", "image/png", "", mediatest.PNGHeader(16384, 10), 400, "INVALID_MEDIA", "16383"},
		{"apng", "image/png", "", mediatest.APNG(), 400, "INVALID_MEDIA", "animated PNG"},
		{"animated webp", "image/webp", "", mediatest.AnimatedWebP(), 400, "INVALID_MEDIA", "animated WebP"},
		{"empty", "image/png", "", []byte{}, 400, "INVALID_MEDIA", "not a JPEG"},
		// A JPEG segment's length counts its own two bytes: 0 and 1 are
		// impossible, and once made the header walk slice backwards.
		{"jpeg segment length 0", "image/jpeg", "", append([]byte("\xff\xd8\xff\xe1\x00\x00"), good[2:]...), 400, "INVALID_MEDIA", "header"},
		{"jpeg segment length 1", "image/jpeg", "", append([]byte("\xff\xd8\xff\xe1\x00\x01"), good[2:]...), 400, "INVALID_MEDIA", "header"},
		{"jpeg segment length 0 alone", "image/jpeg", "", []byte("\xff\xd8\xff\xe1\x00\x00Exif\x00\x00"), 400, "INVALID_MEDIA", "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.digest
			if d == "" {
				d = mediatest.Digest(tc.body)
			}
			p := uploadAt(e, e.Token, tc.contentType, d, tc.body).WantProblem(t, tc.status, tc.code)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q does not mention %q", p.Detail, tc.detail)
			}
		})
	}
	// A header of 16,000,000 pixels exactly is within the limit: it fails
	// later, for want of pixel data, and a file that does not decode is
	// charged nothing.
	p := upload(e, e.Token, "image/png", mediatest.PNGHeader(4000, 4000)).WantProblem(t, 400, "INVALID_MEDIA")
	if !strings.Contains(p.Detail, "decoded") {
		t.Errorf("16 MP header: %q, want a decoding failure", p.Detail)
	}
	if u := countAdmitted(t, e); u.objects != 0 {
		t.Errorf("admitted %+v; a file that fails to decode is not charged", u)
	}
}

func TestMediaTooLarge(t *testing.T) {
	e := mediaEnv(t, apitest.SQLite, fsblob.New(t.TempDir()), mediaOpts{})
	big := append(mediatest.JPEG(mediatest.Photo(64, 48, 3, 5), 90), make([]byte, media.MaxInputBytes)...)
	upload(e, e.Token, "image/jpeg", big).WantProblem(t, 413, "MEDIA_TOO_LARGE")
	// Without a Content-Length (chunked), reading stops at the limit.
	var read atomic.Int64
	req, _ := http.NewRequest(http.MethodPut, e.URL+"/vendors/"+e.Vendor.ID+"/media/"+mediatest.Digest(big),
		io.MultiReader(countingReader{bytes.NewReader(big), &read}, endless{}))
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Content-Type", "image/jpeg")
	req.ContentLength = -1
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
		if res.StatusCode != 413 {
			t.Fatalf("chunked oversized upload = %d", res.StatusCode)
		}
	}
	// Exactly at the limit is accepted (what follows the JPEG's end goes
	// with the metadata).
	exact := append(mediatest.JPEG(mediatest.Photo(64, 48, 3, 5), 90), make([]byte, media.MaxInputBytes)...)[:media.MaxInputBytes]
	if rec := wantRecord(t, upload(e, e.Token, "image/jpeg", exact)); rec.SourceBytes != media.MaxInputBytes {
		t.Fatalf("record %+v", rec)
	}
	// An output above 2 MiB: 16 MP that deflate packs and VP8 cannot.
	p := upload(e, e.Token, "image/png", mediatest.NoisePNG()).WantProblem(t, 413, "MEDIA_TOO_LARGE")
	if !strings.Contains(p.Detail, "canonical WebP") {
		t.Errorf("detail %q", p.Detail)
	}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// probeBody records whether anything read it.
type probeBody struct {
	r    io.Reader
	read atomic.Bool
}

func (p *probeBody) Read(b []byte) (int, error) {
	p.read.Store(true)
	return p.r.Read(b)
}

func (p *probeBody) Close() error { return nil }

// TestMediaChecksBeforeBody: authentication, the vendor grant and the scope
// are settled before a byte of the body is read.
func TestMediaChecksBeforeBody(t *testing.T) {
	e := mediaEnv(t, apitest.SQLite, fsblob.New(t.TempDir()), mediaOpts{})
	body := mediatest.LargePhotoJPEG()
	digest := mediatest.Digest(body)
	ov, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other-probe")
	if err != nil {
		t.Fatal(err)
	}
	readOnly := e.NewToken(e.Vendor.ID, auth.ProductsRead)
	for _, tc := range []struct {
		name, vendorID, token string
		status                int
		code                  string
	}{
		{"no token", e.Vendor.ID, "", 401, "UNAUTHENTICATED"},
		{"bad token", e.Vendor.ID, "mkpat_nope", 401, "UNAUTHENTICATED"},
		{"vendor not granted", ov.ID, e.Token, 404, "NOT_FOUND"},
		{"scope missing", e.Vendor.ID, readOnly, 403, "INSUFFICIENT_SCOPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := &probeBody{r: bytes.NewReader(body)}
			req := httptest.NewRequest(http.MethodPut, "/v1/vendors/"+tc.vendorID+"/media/"+digest, nil)
			req.Body, req.ContentLength = pb, int64(len(body))
			req.Header.Set("Content-Type", "image/jpeg")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			e.Server.ServeHTTP(w, req)
			r := &apitest.Resp{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
			r.WantProblem(t, tc.status, tc.code)
			if pb.read.Load() {
				t.Error("the body was read before the request was authorized")
			}
		})
	}
	// Over the network with Expect: 100-continue, the server never asks
	// for the body of an unauthenticated upload.
	var sent atomic.Int64
	req, _ := http.NewRequest(http.MethodPut, e.URL+"/vendors/"+e.Vendor.ID+"/media/"+digest, countingReader{bytes.NewReader(body), &sent})
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "image/jpeg")
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || sent.Load() != 0 {
		t.Fatalf("status %d after sending %d body bytes; want 401 and none", res.StatusCode, sent.Load())
	}
}

func TestMediaNotConfigured(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := mediaEnv(t, kind, nil, mediaOpts{})
		body := mediatest.JPEG(mediatest.Photo(16, 16, 1, 1), 90)
		r := upload(e, e.Token, "image/jpeg", body)
		r.WantProblem(t, 503, "SERVICE_UNAVAILABLE")
		if r.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		e.Do(apitest.Req{Path: "/media/" + strings.Repeat("a", 64) + ".webp"}).WantProblem(t, 404, "NOT_FOUND")
	})
}

type admitted struct{ bytes, objects int64 }

func countAdmitted(t testing.TB, e *apitest.Env) admitted {
	t.Helper()
	it, err := e.Store.Get(context.Background(), store.Key{PK: datamodel.VendorPartition(e.Vendor.ID), SK: "MEDIA_BUDGET"})
	if err == store.ErrNotFound {
		return admitted{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return admitted{it.Nums["bytes"], it.Nums["objects"]}
}

func TestMediaBudget(t *testing.T) {
	// Noise PNGs: their canonical WebP is smaller than the upload, so the
	// admitted input size is what counts.
	imgs := make([][]byte, 4)
	for i := range imgs {
		imgs[i] = mediatest.PNG(mediatest.Photo(48, 40, 40, uint64(10+i)))
	}
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		t.Run("bytes", func(t *testing.T) {
			limit := int64(len(imgs[0]) + len(imgs[1]))
			e := mediaEnv(t, kind, fsblob.New(t.TempDir()), mediaOpts{budgetBytes: limit})
			a := wantRecord(t, upload(e, e.Token, "image/png", imgs[0]))
			if a.Bytes >= a.SourceBytes {
				t.Fatalf("premise: canonical %d bytes >= upload %d", a.Bytes, a.SourceBytes)
			}
			wantRecord(t, upload(e, e.Token, "image/png", imgs[1])) // exactly at the limit
			if u := countAdmitted(t, e); u.bytes != limit || u.objects != 2 {
				t.Fatalf("admitted %+v, want %d bytes and 2 objects", u, limit)
			}
			p := upload(e, e.Token, "image/png", imgs[2]).WantProblem(t, 409, "MEDIA_QUOTA_EXCEEDED")
			if !strings.Contains(p.Detail, "operator") || !strings.Contains(p.Detail, "retrying will not help") {
				t.Errorf("detail %q should say an operator must review it", p.Detail)
			}
			// Repeating admitted bytes is not a new admission.
			wantRecord(t, upload(e, e.Token, "image/png", imgs[0]))
			if u := countAdmitted(t, e); u.bytes != limit || u.objects != 2 {
				t.Fatalf("after a repeat: admitted %+v", u)
			}
		})
		t.Run("one byte over", func(t *testing.T) {
			e := mediaEnv(t, kind, fsblob.New(t.TempDir()), mediaOpts{budgetBytes: int64(len(imgs[0]) + len(imgs[1]) - 1)})
			wantRecord(t, upload(e, e.Token, "image/png", imgs[0]))
			upload(e, e.Token, "image/png", imgs[1]).WantProblem(t, 409, "MEDIA_QUOTA_EXCEEDED")
		})
		t.Run("objects; a file that fails to decode is not charged", func(t *testing.T) {
			e := mediaEnv(t, kind, fsblob.New(t.TempDir()), mediaOpts{budgetObjects: 3})
			good := mediatest.JPEG(mediatest.Photo(64, 48, 3, 5), 90)
			truncated := good[:len(good)/2] // the header reads; the pixels do not
			upload(e, e.Token, "image/jpeg", truncated).WantProblem(t, 400, "INVALID_MEDIA")
			upload(e, e.Token, "image/jpeg", truncated).WantProblem(t, 400, "INVALID_MEDIA")
			if u := countAdmitted(t, e); u.objects != 0 || u.bytes != 0 {
				t.Fatalf("after failed uploads: admitted %+v, want nothing", u)
			}
			wantRecord(t, upload(e, e.Token, "image/png", imgs[0]))
			wantRecord(t, upload(e, e.Token, "image/png", imgs[1]))
			wantRecord(t, upload(e, e.Token, "image/png", imgs[2])) // the third object: at the limit
			upload(e, e.Token, "image/png", imgs[3]).WantProblem(t, 409, "MEDIA_QUOTA_EXCEEDED")
			// With the budget spent, the budget is what answers, before
			// any decoding.
			upload(e, e.Token, "image/jpeg", truncated).WantProblem(t, 409, "MEDIA_QUOTA_EXCEEDED")
			if u := countAdmitted(t, e); u.objects != 3 {
				t.Fatalf("admitted %+v, want 3 objects", u)
			}
		})
		t.Run("a storage failure keeps its admission, and the retry reuses it", func(t *testing.T) {
			fb := &failingBlob{Store: fsblob.New(t.TempDir())}
			e := mediaEnv(t, kind, fb, mediaOpts{budgetObjects: 1})
			fb.fail.Store(true)
			upload(e, e.Token, "image/png", imgs[0]).WantProblem(t, 503, "SERVICE_UNAVAILABLE")
			if u := countAdmitted(t, e); u.objects != 1 || u.bytes != int64(len(imgs[0])) {
				t.Fatalf("after a storage failure: admitted %+v, want the upload's admission kept", u)
			}
			// Another image does not fit: the failed one holds the slot.
			fb.fail.Store(false)
			upload(e, e.Token, "image/png", imgs[1]).WantProblem(t, 409, "MEDIA_QUOTA_EXCEEDED")
			// The identical bytes at the same path reuse the admission.
			wantRecord(t, upload(e, e.Token, "image/png", imgs[0]))
			if u := countAdmitted(t, e); u.objects != 1 || u.bytes != int64(len(imgs[0])) {
				t.Fatalf("after the retry: admitted %+v", u)
			}
		})
	})
}

// failingBlob fails every Put while fail is set.
type failingBlob struct {
	blob.Store
	fail atomic.Bool
}

func (f *failingBlob) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if f.fail.Load() {
		return fmt.Errorf("failingBlob: storage is down")
	}
	return f.Store.Put(ctx, key, data, contentType)
}

func TestMediaConcurrentSameBytes(t *testing.T) {
	forEachMediaStore(t, func(t *testing.T, kind apitest.StoreKind, bk string) {
		dir := t.TempDir()
		var b blob.Store = fsblob.New(dir)
		if bk == "s3" {
			b = s3test.New(t)
		}
		e := mediaEnv(t, kind, b, mediaOpts{})
		body := mediatest.JPEG(mediatest.Photo(400, 300, 5, 8), 90)
		const n = 8
		tokens := make([]string, n)
		for i := range tokens {
			tokens[i] = e.NewToken(e.Vendor.ID, auth.ProductsWrite)
		}
		recs := make([]mediaRecord, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				recs[i] = wantRecord(t, upload(e, tokens[i], "image/jpeg", body))
			}()
		}
		wg.Wait()
		for i := range recs {
			if recs[i] != recs[0] {
				t.Fatalf("record %d = %+v, want %+v", i, recs[i], recs[0])
			}
		}
		if u := countAdmitted(t, e); u.objects != 1 || u.bytes != int64(len(body)) {
			t.Fatalf("admitted %+v, want one object of %d bytes", u, len(body))
		}
		if bk == "fs" {
			entries, err := os.ReadDir(filepath.Join(dir, "media"))
			if err != nil || len(entries) != 1 {
				t.Fatalf("objects on disk: %v %v, want one", entries, err)
			}
		}
	})
}

// TestMediaLargePhoto uploads a 6 MP photo-like JPEG of about 2 MiB, what a
// seller's camera produces, and checks that its canonical WebP fits.
func TestMediaLargePhoto(t *testing.T) {
	body := mediatest.LargePhotoJPEG()
	forEachMediaStore(t, func(t *testing.T, kind apitest.StoreKind, bk string) {
		e := mediaEnv(t, kind, openBlob(t, bk), mediaOpts{})
		start := time.Now()
		rec := wantRecord(t, upload(e, e.Token, "image/jpeg", body))
		t.Logf("%d-byte 3000x2000 JPEG -> %d-byte WebP in %v", len(body), rec.Bytes, time.Since(start))
		if rec.Width != 3000 || rec.Height != 2000 || rec.Bytes > media.MaxOutputBytes || rec.Bytes >= rec.SourceBytes {
			t.Fatalf("record %+v", rec)
		}
		fetch(t, e, rec)
	})
}

// BenchmarkMediaUpload measures an upload of a 2 MiB photo-like JPEG over
// HTTP on the embedded store: MB/s of upload and the heap it needs. Each
// iteration uploads new bytes (one trailing byte differs), so every one is
// decoded, encoded and stored.
func BenchmarkMediaUpload(b *testing.B) {
	base := mediatest.LargePhotoJPEG()
	e := mediaEnv(b, apitest.SQLite, fsblob.New(b.TempDir()), mediaOpts{budgetObjects: 1 << 30, budgetBytes: 1 << 50})
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = append(append([]byte{}, base...), []byte(fmt.Sprintf("%08d", i))...)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.SetBytes(int64(len(base)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := upload(e, e.Token, "image/jpeg", bodies[i])
		if r.Status != 200 {
			b.Fatalf("upload: %d %s", r.Status, r.Body)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), before.HeapInuse))/(1<<20), "peak-heap-MiB")
	var rec struct {
		Data mediaRecord `json:"data"`
	}
	json.Unmarshal(upload(e, e.Token, "image/jpeg", bodies[0]).Body, &rec)
	b.ReportMetric(float64(rec.Data.Bytes), "webp-bytes")
}

// Decoding is admitted by a memory estimate read from the header before
// any pixel is decoded. The shapes, made here: a 4000x4000 16-bit
// interlaced PNG (about 336 MiB to decode and re-encode) and a 4000x4000
// progressive CMYK JPEG (about 458 MiB) are refused with 413 and charged
// nothing; the same PNG not interlaced (about 214 MiB) is admitted to
// decoding, and a real 16-bit PNG is stored.
func TestMediaDecodeMemoryAdmission(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := mediaEnv(t, kind, fsblob.New(t.TempDir()), mediaOpts{})
		for _, tc := range []struct {
			name, contentType string
			body              []byte
			traits            []string
		}{
			{"16-bit interlaced PNG", "image/png", mediatest.PNGShape(4000, 4000, 16, 2, true), []string{"16-bit samples", "interlaced", "256 MiB"}},
			{"progressive CMYK JPEG", "image/jpeg", mediatest.JPEGShape(4000, 4000, true, 4), []string{"progressive", "CMYK", "256 MiB"}},
		} {
			p := upload(e, e.Token, tc.contentType, tc.body).WantProblem(t, http.StatusRequestEntityTooLarge, "MEDIA_TOO_LARGE")
			for _, want := range tc.traits {
				if !strings.Contains(p.Detail, want) {
					t.Errorf("%s: detail %q does not mention %q", tc.name, p.Detail, want)
				}
			}
		}
		// Admitted to decoding: it fails there, for want of pixel data.
		p := upload(e, e.Token, "image/png", mediatest.PNGShape(4000, 4000, 16, 2, false)).WantProblem(t, 400, "INVALID_MEDIA")
		if !strings.Contains(p.Detail, "decoded") {
			t.Errorf("non-interlaced 16-bit PNG: %q, want a decoding failure", p.Detail)
		}
		if u := countAdmitted(t, e); u != (admitted{}) {
			t.Fatalf("admitted %+v, want nothing", u)
		}
		m := image.NewNRGBA64(image.Rect(0, 0, 320, 200))
		for i := range m.Pix {
			m.Pix[i] = byte(i * 7)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, m); err != nil {
			t.Fatal(err)
		}
		if rec := wantRecord(t, upload(e, e.Token, "image/png", b.Bytes())); rec.Width != 320 || rec.Height != 200 {
			t.Fatalf("16-bit PNG: %+v", rec)
		}
		if s := e.Server.MediaDecodes(); s.PeakUsed == 0 || s.PeakUsed > s.Budget || s.Running != 0 {
			t.Fatalf("decode gate after the uploads: %+v", s)
		}
	})
}

// Concurrent uploads decode within the process's budget: with room for
// one photo's decode at a time, six uploads from six goroutines all
// succeed, one decode at a time.
func TestMediaConcurrentDecodesBounded(t *testing.T) {
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, Blob: fsblob.New(t.TempDir()), Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		c.MediaDecodeBytes = 3 << 20 // a 640x480 photo's estimate is about 2.2 MiB
	}})
	const n = 6
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = mediatest.JPEG(mediatest.Photo(640, 480, 4, uint64(40+i)), 90)
	}
	var wg sync.WaitGroup
	status := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status[i] = upload(e, e.Token, "image/jpeg", bodies[i]).Status
		}()
	}
	wg.Wait()
	for i, st := range status {
		if st != http.StatusOK {
			t.Fatalf("upload %d: %d", i, st)
		}
	}
	s := e.Server.MediaDecodes()
	if s.PeakRunning != 1 || s.PeakUsed > 3<<20 || s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("decode gate: %+v, want one decode at a time within 3 MiB", s)
	}
}

// An embedded colour profile other than sRGB is refused with a 400 that
// names it and charges nothing; an sRGB profile passes.
func TestMediaColourProfiles(t *testing.T) {
	e := mediaEnv(t, apitest.SQLite, fsblob.New(t.TempDir()), mediaOpts{})
	jpg := mediatest.JPEG(mediatest.Photo(64, 48, 3, 9), 90)
	p := upload(e, e.Token, "image/jpeg", mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("RGB ", "Adobe RGB (1998)"), 500)).WantProblem(t, 400, "INVALID_MEDIA")
	if !strings.Contains(p.Detail, "Adobe RGB (1998)") || !strings.Contains(p.Detail, "sRGB") {
		t.Errorf("detail %q", p.Detail)
	}
	if u := countAdmitted(t, e); u != (admitted{}) {
		t.Fatalf("admitted %+v", u)
	}
	wantRecord(t, upload(e, e.Token, "image/jpeg", mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("RGB ", "sRGB IEC61966-2.1"), 500)))
}
