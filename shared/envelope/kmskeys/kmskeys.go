// Package kmskeys is the envelope key source of a deployed stage: data
// keys generated and unwrapped by AWS KMS under the stack's
// customer-managed key (SELLERAPI_KMS_KEY_ARN).
package kmskeys

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// API is the part of the KMS client the source calls.
type API interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// EncryptionContext is the context of every data key: KMS refuses to
// unwrap one under another context, and CloudTrail records it with each
// call.
func EncryptionContext() map[string]string {
	return map[string]string{"service": "sellerapi", "purpose": "secrets-at-rest"}
}

// Source makes and unwraps data keys with KMS key KeyID (an ARN).
type Source struct {
	API   API
	KeyID string
}

// GenerateDataKey asks KMS for an AES-256 data key.
func (s Source) GenerateDataKey(ctx context.Context) (plain, wrapped []byte, err error) {
	out, err := s.API.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(s.KeyID), KeySpec: types.DataKeySpecAes256, EncryptionContext: EncryptionContext()})
	if err != nil {
		return nil, nil, fmt.Errorf("kms: generate data key: %w", err)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Decrypt asks KMS to unwrap a data key, naming the key it must be under.
func (s Source) Decrypt(ctx context.Context, wrapped []byte) ([]byte, error) {
	out, err := s.API.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(s.KeyID), CiphertextBlob: wrapped, EncryptionContext: EncryptionContext()})
	if err != nil {
		return nil, fmt.Errorf("kms: decrypt data key: %w", err)
	}
	return out.Plaintext, nil
}
