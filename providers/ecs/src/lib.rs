//! cdkd's ecs provider plugin: ECS clusters, task definitions and services.

cdkd_provider_api::export_plugin!(description: "ECS clusters, task definitions and services");
