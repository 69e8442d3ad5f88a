//! The synthesis layer: running the CDK app (or reading a `cdk.out`) and reading the cloud
//! assembly it produced: stacks, templates, environments, assets, missing context.

pub mod annotations;
pub mod assembly;
pub mod order;
pub mod runner;
pub mod selection;
pub mod template_file;
