//! cdkd: deploys AWS CDK apps without CloudFormation.
//!
//! The library behind the `cdkd` binary. Layers, in their one direction of dependency:
//! [`cli`] → synthesis → assets → analyzer → state → deployment → [`provisioning`].
//! Provider plugins are loaded through `cdkd-provider-api`; this crate holds no `unsafe`.

#![forbid(unsafe_code)]

pub mod analyzer;
pub mod assets;
pub mod aws_env;
pub mod cli;
pub mod deployment;
pub mod provisioning;
pub mod state;
pub mod synthesis;
