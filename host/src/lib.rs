//! cdkd: deploys AWS CDK apps without CloudFormation.
//!
//! The library behind the `cdkd` binary. Layers, each using only those to its right:
//! [`cli`] → [`app`] → [`local`] → [`deployment`] → [`assets`] → [`synthesis`] →
//! [`provisioning`] → [`cloudformation`] → [`analyzer`] → [`state`] → [`aws_facts`] →
//! [`aws_env`] → [`seconds`] → [`printable`]. (`deployment` also uses `provisioning` through
//! its seam, [`provisioning::operations`], and CloudFormation through
//! [`cloudformation::CloudFormationApi`]; `synthesis` needs only `analyzer`.)
//! Provider plugins are loaded through `cdkd-provider-api`; this crate holds no `unsafe`.

#![forbid(unsafe_code)]
// Input never panics the host: an `unwrap` or `expect` outside tests is an error unless its
// function says, in an `allow` with a reason, which invariant makes it safe.
#![deny(clippy::unwrap_used, clippy::expect_used)]

// Every line cdkd prints may carry text from templates, state or AWS: these shadow the
// standard macros for the whole crate (macro_rules! scoping is textual, so they must come
// before the `mod` lines), so no print site can forget `printable`.
macro_rules! println {
    () => { $crate::printable::print_out(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::printable::print_out(format_args!($($arg)*), true) };
}
macro_rules! print {
    ($($arg:tt)*) => { $crate::printable::print_out(format_args!($($arg)*), false) };
}
macro_rules! eprintln {
    () => { $crate::printable::print_err(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::printable::print_err(format_args!($($arg)*), true) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::printable::print_err(format_args!($($arg)*), false) };
}

pub mod analyzer;
pub mod app;
pub mod assets;
pub mod aws_env;
pub mod aws_facts;
pub mod cli;
pub mod cloudformation;
pub mod deployment;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod layers;
pub mod local;
pub mod printable;
pub mod provisioning;
pub mod seconds;
pub mod state;
pub mod synthesis;
