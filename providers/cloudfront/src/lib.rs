//! cdkd's cloudfront provider plugin: CloudFront distributions, origin access, functions and policies.

cdkd_provider_api::export_plugin!(description: "CloudFront distributions, origin access, functions and policies");
