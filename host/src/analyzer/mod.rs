//! The analysis layer: a template's model, its intrinsic resolution, the dependency graph of
//! its resources, and the plan (diff) against a state record.
//!
//! It knows nothing of S3 or providers: state arrives as a record, create-only properties and
//! cross-stack values through small traits the caller implements.

pub mod dag;
pub mod diff;
pub mod drift;
pub mod intrinsics;
pub mod no_echo;
pub mod plan;
pub mod ref_values;
pub mod security;
pub mod template;
