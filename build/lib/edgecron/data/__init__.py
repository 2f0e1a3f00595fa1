"""Data access: the only package that talks to DynamoDB, SQS, SNS, KMS and Secrets Manager."""
