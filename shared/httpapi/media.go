package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/ratelimit"
)

// Media is the media upload group: a vendor's PUT of raw image bytes, and
// the public GET of the canonical objects, which a deployment without a CDN
// in front of its bucket (and the local server) uses as the records' urls.
var Media = Group{Name: "media", Routes: func(s *Server) []Route {
	return []Route{
		{Method: http.MethodPut, Path: "/vendors/{vendor_id}/media/{sha256}", Operation: "putMedia", Scopes: []auth.Scope{auth.ProductsWrite}, Handle: s.putMedia},
		{Method: http.MethodGet, Path: "/media/{file}", Operation: "getMediaFile", Throttle: ratelimit.Public, Handle: s.getMediaFile},
	}
}}

// putMedia runs after the platform has authenticated the token, checked
// the vendor grant and the scope: nothing of the body is read before. It
// also waits for the rate decision, checks storage, the digest's form, the
// content type and the declared length before reading, so a refused upload
// costs no transfer.
func (s *Server) putMedia(ctx context.Context, c *Call) error {
	if err := c.settleRate(); err != nil {
		return err
	}
	if !c.media().Configured() {
		return errs.Unavailablef(nil, "media storage is not configured for this deployment")
	}
	digest := c.R.PathValue("sha256")
	if err := media.ValidDigest(digest); err != nil {
		return err
	}
	mt, _, err := mime.ParseMediaType(c.R.Header.Get("Content-Type"))
	if err != nil || !media.AcceptedType(mt) || len(c.R.Header.Values("Content-Type")) > 1 {
		return errs.E(errs.CodeInvalidMedia, "Content-Type: must be image/jpeg, image/png or image/webp, with the raw image bytes as the body (not JSON, multipart, a URL or base64)")
	}
	if c.R.ContentLength > media.MaxInputBytes {
		return tooLarge()
	}
	body, err := readAtMost(c.R.Body, c.R.ContentLength, media.MaxInputBytes)
	if err != nil {
		return err
	}
	// The transfer may have used up the request's deadline, and decoding
	// is CPU work no store deadline should cut: the upload's phases get
	// their own bounds (media.Service.Put), keeping the request's values.
	rec, err := c.media().Put(context.WithoutCancel(ctx), media.Upload{VendorID: c.Principal.Vendor.ID, SHA256: digest, ContentType: mt, Body: body})
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, rec)
}

func tooLarge() error {
	return errs.Ef(errs.CodeMediaTooLarge, "body: larger than %d bytes", media.MaxInputBytes)
}

// readAtMost reads a body of at most limit bytes, stopping as soon as it
// passes the limit.
func readAtMost(r io.Reader, declared, limit int64) ([]byte, error) {
	size := int64(64 << 10)
	if declared > 0 {
		size = declared
	}
	buf := make([]byte, 0, min(size, limit)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge()
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, errs.Wrap(errs.CodeInvalidRequest, "body: could not be read", err)
		}
	}
}

var mediaFile = regexp.MustCompile(`^[0-9a-f]{64}\.webp$`)

// getMediaFile serves a canonical object. Objects never change, so it may
// be cached for a year; the digest in its name is its ETag.
func (s *Server) getMediaFile(ctx context.Context, c *Call) error {
	name := c.R.PathValue("file")
	if !mediaFile.MatchString(name) || s.svc.Media.Blob == nil {
		return errs.E(errs.CodeNotFound, "No media object has this name.")
	}
	etag := `"` + name[:64] + `"`
	rc, info, err := s.svc.Media.Blob.Get(ctx, "media/"+name)
	if errors.Is(err, blob.ErrNotFound) {
		return errs.E(errs.CodeNotFound, "No media object has this name.")
	}
	if err != nil {
		return errs.Unavailablef(err, "the media object could not be read")
	}
	defer rc.Close()
	h := c.W.Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	if c.R.Header.Get("If-None-Match") == etag {
		c.W.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", media.ContentType)
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	c.W.WriteHeader(http.StatusOK)
	io.Copy(c.W, rc)
	return nil
}
