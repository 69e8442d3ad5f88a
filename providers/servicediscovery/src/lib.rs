//! cdkd's servicediscovery provider plugin: Cloud Map namespaces and services.

cdkd_provider_api::export_plugin!(description: "Cloud Map namespaces and services");
