#!/bin/bash
# LocalStack runs this once its services answer: create stage "local"'s
# table and media bucket (localstack/bootstrap; names from shared/resources).
# It is idempotent, so a restart with a persisted state is harmless.
set -euo pipefail
bin=/opt/sellerapi/bootstrap
if [[ ! -x $bin ]]; then
	echo "sellerapi: $bin is missing; start with 'bash scripts/localstack up', which builds it" >&2
	exit 1
fi
AWS_ENDPOINT_URL=http://localhost:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	AWS_REGION="${AWS_DEFAULT_REGION:-us-east-1}" "$bin" --stage local
touch /tmp/sellerapi-ready
