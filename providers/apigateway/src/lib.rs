//! cdkd's apigateway provider plugin: API Gateway REST APIs.

cdkd_provider_api::export_plugin!(description: "API Gateway REST APIs");
