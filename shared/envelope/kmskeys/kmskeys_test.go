package kmskeys_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/envelope/kmskeys"
)

const keyARN = "arn:aws:kms:us-east-1:111122223333:key/11111111-2222-3333-4444-555555555555"

// fakeKMS stands in for the KMS client: it wraps data keys by remembering
// them under an opaque random blob, refuses another key id or encryption
// context as KMS does, and counts its calls.
type fakeKMS struct {
	mu                  sync.Mutex
	keys                map[string][]byte
	generates, decrypts int
}

func (f *fakeKMS) check(keyID *string, ctx map[string]string) error {
	if aws.ToString(keyID) != keyARN {
		return &types.NotFoundException{Message: aws.String("no such key")}
	}
	if !maps.Equal(ctx, kmskeys.EncryptionContext()) {
		return &types.InvalidCiphertextException{Message: aws.String("encryption context differs")}
	}
	return nil
}

func (f *fakeKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	if err := f.check(in.KeyId, in.EncryptionContext); err != nil {
		return nil, err
	}
	if in.KeySpec != types.DataKeySpecAes256 {
		return nil, errors.New("fake: want AES_256")
	}
	plain, blob := make([]byte, 32), make([]byte, 48)
	rand.Read(plain)
	rand.Read(blob)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string][]byte{}
	}
	f.keys[string(blob)] = bytes.Clone(plain)
	f.generates++
	return &kms.GenerateDataKeyOutput{KeyId: in.KeyId, Plaintext: plain, CiphertextBlob: blob}, nil
}

func (f *fakeKMS) Decrypt(ctx context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	if err := f.check(in.KeyId, in.EncryptionContext); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decrypts++
	plain, ok := f.keys[string(in.CiphertextBlob)]
	if !ok {
		return nil, &types.InvalidCiphertextException{Message: aws.String("not a ciphertext of this key")}
	}
	return &kms.DecryptOutput{KeyId: in.KeyId, Plaintext: bytes.Clone(plain)}, nil
}

// Two execution environments share the table: each generates one data key
// for everything it seals, and unwraps each key it meets once.
func TestOneDataKeyPerEnvironmentEachUnwrappedOnce(t *testing.T) {
	ctx := context.Background()
	api := &fakeKMS{}
	a := envelope.New(kmskeys.Source{API: api, KeyID: keyARN})
	b := envelope.New(kmskeys.Source{API: api, KeyID: keyARN})
	var sealed []envelope.Sealed
	for i := range 5 {
		s, err := a.Seal(ctx, []byte("whsec_secret"), []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, s)
	}
	if api.generates != 1 {
		t.Fatalf("five seals generated %d data keys, want 1", api.generates)
	}
	for i, s := range sealed {
		for _, box := range []*envelope.Box{a, b} {
			got, err := box.Open(ctx, s, []byte{byte(i)})
			if err != nil || string(got) != "whsec_secret" {
				t.Fatalf("open %d: %q, %v", i, got, err)
			}
		}
	}
	if api.decrypts != 1 {
		t.Fatalf("the other environment unwrapped %d times, want once (the sealing one never)", api.decrypts)
	}
	if bytes.Contains(sealed[0].Key, []byte("whsec_secret")) || bytes.Contains(sealed[0].Data, []byte("whsec_secret")) {
		t.Fatal("the sealed value holds the secret in the clear")
	}
}

// A source under another key (or a KMS failure) is an error of the open,
// never a value.
func TestOtherKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	api := &fakeKMS{}
	s, err := envelope.New(kmskeys.Source{API: api, KeyID: keyARN}).Seal(ctx, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = envelope.New(kmskeys.Source{API: api, KeyID: keyARN + "-other"}).Open(ctx, s, nil)
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("open under another key: %v, want KMS's NotFound wrapped", err)
	}
	if _, err := envelope.New(kmskeys.Source{API: api, KeyID: keyARN}).Open(ctx, envelope.Sealed{Key: []byte("forged"), Nonce: s.Nonce, Data: s.Data}, nil); err == nil {
		t.Fatal("a forged wrapped key opened")
	}
}
