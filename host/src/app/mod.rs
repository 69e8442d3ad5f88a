//! The application layer: what the commands do, between [`crate::cli`] (which parses flags,
//! asks and prints) and the engine ([`crate::deployment`]).
//!
//! A command builds its engine once through [`Backends`]; the multi-stack runs live here:
//! the order of a run's stacks ([`RunOrder`]), deploying them through the executor with one
//! shared state snapshot ([`StackRun`]), destroying them consumers first
//! ([`destroy::destroy_stacks`]), and the fallback readers that fill the snapshot from
//! other accounts and CloudFormation before a run ([`fallback`]). The rules run on the
//! engine's in-memory fakes in this module's tests.

pub mod backends;
pub mod deploy;
pub mod destroy;
pub mod fallback;
pub mod order;
#[cfg(test)]
mod tests;

pub use backends::Backends;
pub use deploy::{RunLog, RunResult, StackInputs, StackRun};
pub use order::RunOrder;
