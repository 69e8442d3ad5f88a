//! cdkd's elbv2 provider plugin: Elastic Load Balancing v2 load balancers, target groups and listeners.

cdkd_provider_api::export_plugin!(description: "Elastic Load Balancing v2 load balancers, target groups and listeners");
