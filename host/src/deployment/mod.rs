//! The deployment layer: turning plans into provider calls, and the cross-stack values
//! they read from other stacks' state.

pub mod executor;
pub mod external;
