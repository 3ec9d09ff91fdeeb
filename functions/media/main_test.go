package main

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/blob/fsblob"
	"github.com/moku/sellerapi/shared/blob/s3blob/s3test"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

func handler(t *testing.T, cfg config.Config, f lt.Fixture, b blob.Store) lambdaapi.Handler {
	t.Helper()
	cfg.KeyFile = f.KeyFile
	opts := append(options(), app.WithStore(f.Store), app.WithLogOutput(t.Output()))
	if b != nil {
		opts = append(opts, app.WithBlob(b))
	}
	h, err := lambdaapi.New(t.Context(), cfg, []httpapi.Group{group()}, opts...)
	if err != nil {
		t.Fatalf("lambdaapi.New: %v", err)
	}
	return h
}

type record struct {
	SHA256            string `json:"sha256"`
	URL               string `json:"url"`
	ContentType       string `json:"content_type"`
	Width             int    `json:"width"`
	Height            int    `json:"height"`
	SourceBytes       int64  `json:"source_bytes"`
	SourceContentType string `json:"source_content_type"`
}

// putSample sends put-media.json, whose body API Gateway base64-encoded:
// the adapter decodes it, so the digest of the decoded bytes matches the
// path.
func putSample(t *testing.T, h lambdaapi.Handler, f lt.Fixture) record {
	t.Helper()
	ev := lt.Event(t, "media/put-media.json", f.Vars())
	raw, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil || !ev.IsBase64Encoded {
		t.Fatalf("the sample's body is not base64 (%v)", err)
	}
	if d := mediatest.Digest(raw); !strings.HasSuffix(ev.RawPath, "/"+d) {
		t.Fatalf("sample path %s does not end in its body's digest %s", ev.RawPath, d)
	}
	resp := lt.Invoke(t, h, ev)
	lt.WantStatus(t, resp, http.StatusOK)
	var got struct {
		Data record `json:"data"`
	}
	lt.Decode(t, resp.Body, &got)
	want := record{SHA256: mediatest.Digest(raw), URL: got.Data.URL, ContentType: "image/webp", Width: 4, Height: 4,
		SourceBytes: int64(len(raw)), SourceContentType: "image/png"}
	if got.Data != want {
		t.Fatalf("record %+v, want %+v", got.Data, want)
	}
	return got.Data
}

func TestPutMedia(t *testing.T) {
	f := lt.SQLite(t)
	cfg := config.Default()
	cfg.MediaBaseURL = "https://media.example.com"
	h := handler(t, cfg, f, fsblob.New(t.TempDir()))
	rec := putSample(t, h, f)
	if !strings.HasPrefix(rec.URL, "https://media.example.com/media/") || !strings.HasSuffix(rec.URL, ".webp") {
		t.Fatalf("url %s", rec.URL)
	}
	// A repeat is the same record.
	if again := putSample(t, h, f); again != rec {
		t.Fatalf("repeat %+v, want %+v", again, rec)
	}
}

// TestGetMediaFile: the object comes back base64-encoded, as API Gateway
// needs binary bodies.
func TestGetMediaFile(t *testing.T) {
	f := lt.SQLite(t)
	h := handler(t, config.Default(), f, fsblob.New(t.TempDir()))
	rec := putSample(t, h, f)
	file := rec.URL[strings.LastIndex(rec.URL, "/")+1:]
	ev := lt.Event(t, "media/put-media.json", f.Vars())
	ev.RouteKey, ev.RequestContext.RouteKey = "GET /v1/media/{file}", "GET /v1/media/{file}"
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.Method = "/v1/media/"+file, "/v1/media/"+file, http.MethodGet
	ev.PathParameters = map[string]string{"file": file}
	ev.Body, ev.IsBase64Encoded = "", false
	delete(ev.Headers, "authorization")
	resp, err := h(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !resp.IsBase64Encoded {
		t.Fatalf("status %d, base64 %v", resp.StatusCode, resp.IsBase64Encoded)
	}
	b, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := webp.DecodeConfig(bytes.NewReader(b)); err != nil || cfg.Width != 4 {
		t.Fatalf("object: %+v %v", cfg, err)
	}
}

// TestNoStorage: a deployment without a bucket fails closed.
func TestNoStorage(t *testing.T) {
	f := lt.SQLite(t)
	cfg := config.Default()
	cfg.Store, cfg.DataDir = config.StoreDynamoDB, "" // no bucket, no directory
	h := handler(t, cfg, f, nil)
	lt.WantProblem(t, lt.Invoke(t, h, lt.Event(t, "media/put-media.json", f.Vars())), http.StatusServiceUnavailable)
}

// TestServesOnlyMedia: API Gateway routes other groups to their functions.
func TestServesOnlyMedia(t *testing.T) {
	f := lt.SQLite(t)
	h := handler(t, config.Default(), f, fsblob.New(t.TempDir()))
	lt.WantProblem(t, lt.Invoke(t, h, lt.Event(t, "vendors/list-vendors.json", f.Vars())), http.StatusNotFound)
}

// TestAWS runs the sample on the Lambda's AWS stores: DynamoDB Local and
// S3 (gofakes3). It skips without the emulator unless REQUIRE_EMULATORS=1.
func TestAWS(t *testing.T) {
	cfg, f := lt.DynamoDB(t)
	h := handler(t, cfg, f, s3test.New(t))
	rec := putSample(t, h, f)
	if again := putSample(t, h, f); again != rec {
		t.Fatalf("repeat %+v, want %+v", again, rec)
	}
}
