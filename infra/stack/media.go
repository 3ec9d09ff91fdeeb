package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// newMediaEdge serves the media bucket's objects through CloudFront, with
// origin access control: the bucket stays private (public access blocked),
// and only this distribution may read it. The media function is told the
// distribution's address (SELLERAPI_MEDIA_BASE_URL), so the urls of upload
// records point at the edge and image reads never invoke a Lambda. Objects
// are content-addressed and stored with a year's immutable Cache-Control
// (s3blob.CacheControl), which the cache policy honours.
func (s *Stack) newMediaEdge(d Definition) {
	s.MediaCDN = awscloudfront.NewDistribution(s.Stack, jsii.String("MediaCdn"), &awscloudfront.DistributionProps{
		Comment: jsii.String("sellerapi " + d.Stage + " media"),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin: awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(s.Bucket, &awscloudfrontorigins.S3BucketOriginWithOACProps{
				OriginAccessLevels: &[]awscloudfront.AccessLevel{awscloudfront.AccessLevel_READ},
			}),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
			CachedMethods:        awscloudfront.CachedMethods_CACHE_GET_HEAD(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			// WebP is compressed already.
			Compress: jsii.Bool(false),
		},
		HttpVersion:            awscloudfront.HttpVersion_HTTP2_AND_3,
		MinimumProtocolVersion: awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021,
		PriceClass:             awscloudfront.PriceClass_PRICE_CLASS_100,
	})
	s.MediaBaseURL = "https://" + *s.MediaCDN.DistributionDomainName()
	awscdk.NewCfnOutput(s.Stack, jsii.String("MediaBaseUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Where uploaded images are served (SELLERAPI_MEDIA_BASE_URL)"),
		Value:       jsii.String(s.MediaBaseURL),
	})
}

// MediaActions are what the blob store's S3 adapter needs on the media
// objects: PutObject, and GetObject for GetObject and HeadObject.
// ListBucket on the bucket lets a missing object answer 404 rather than 403.
var MediaActions = []string{"s3:GetObject", "s3:PutObject"}

func (s *Stack) grantMedia(f awslambda.Function) {
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("MediaObjects"),
		Actions:   jsii.Strings(MediaActions...),
		Resources: &[]*string{s.Bucket.ArnForObjects(jsii.String("media/*"))},
	}))
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("MediaMissingIs404"),
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: &[]*string{s.Bucket.BucketArn()},
	}))
}
