//! cdkd's cognito provider plugin: Cognito user pools, clients, domains and identity pools.

cdkd_provider_api::export_plugin!(description: "Cognito user pools, clients, domains and identity pools");
