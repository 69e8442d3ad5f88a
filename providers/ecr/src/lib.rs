//! cdkd's ecr provider plugin: ECR repositories.

cdkd_provider_api::export_plugin!(description: "ECR repositories");
