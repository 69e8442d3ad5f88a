//! cdkd's autoscaling provider plugin: EC2 Auto Scaling groups and Application Auto Scaling targets and policies.

cdkd_provider_api::export_plugin!(description: "EC2 Auto Scaling groups and Application Auto Scaling targets and policies");
