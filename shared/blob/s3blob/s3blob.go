// Package s3blob is the AWS adapter of the blob port: one S3 object per key
// in one bucket, written with If-None-Match so that an existing object is
// never replaced. The client honours AWS_ENDPOINT_URL_S3 (or
// AWS_ENDPOINT_URL) to reach an emulator such as LocalStack.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/moku/sellerapi/shared/blob"
)

// CacheControl is sent with every object: a key names its content, so an
// object never changes and caches may keep it for a year.
const CacheControl = "public, max-age=31536000, immutable"

// Store keeps objects in Bucket.
type Store struct {
	Client *s3.Client
	Bucket string
}

var _ blob.Store = (*Store)(nil)

// New returns a store over bucket.
func New(client *s3.Client, bucket string) *Store { return &Store{Client: client, Bucket: bucket} }

// NewClient builds an S3 client from the default AWS configuration. With a
// custom endpoint (an emulator) it addresses buckets by path, which
// emulators without wildcard DNS need. Checksums are computed only where S3
// requires them, which emulators also handle.
func NewClient(ctx context.Context) (*s3.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	custom := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = custom
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// Put writes the object unless the key exists. S3 answers an existing key
// with 412 (or 409 while a concurrent write of it is in flight); either
// means the content is already there.
func (s *Store) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if err := blob.ValidKey(key); err != nil {
		return err
	}
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String(contentType),
		CacheControl:  aws.String(CacheControl),
		IfNoneMatch:   aws.String("*"),
	})
	if st := status(err); st == http.StatusPreconditionFailed || st == http.StatusConflict {
		return nil
	}
	if err != nil {
		return fmt.Errorf("s3blob: put %s: %w", key, err)
	}
	return nil
}

// Head describes the object.
func (s *Store) Head(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.ValidKey(key); err != nil {
		return blob.Info{}, err
	}
	out, err := s.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if status(err) == http.StatusNotFound {
		return blob.Info{}, blob.ErrNotFound
	}
	if err != nil {
		return blob.Info{}, fmt.Errorf("s3blob: head %s: %w", key, err)
	}
	return blob.Info{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, nil
}

// Get opens the object.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if status(err) == http.StatusNotFound {
		return nil, blob.Info{}, blob.ErrNotFound
	}
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("s3blob: get %s: %w", key, err)
	}
	return out.Body, blob.Info{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, nil
}

// status is the HTTP status of a failed S3 call, or 0.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
