//! cdkd's wafv2 provider plugin: WAF web ACLs and their associations.

cdkd_provider_api::export_plugin!(description: "WAF web ACLs and their associations");
