//! The schema: what the derive knows about an entity, written down once.
//!
//! - [`entity`]: the [`crate::Entity`] trait and the static description
//!   (columns, maps, index kinds) every plan is built from;
//! - [`field`]: typed field handles (`User::USERNAME`) and the index-kind
//!   markers that make a query on an unindexed field fail to compile;
//! - [`codec`]: how field values become bytes in Redis and back;
//! - [`escape`]: how values become key segments, injectively;
//! - [`update_op`]: the changes an `update()` is made of;
//! - [`condition`]: what a conditional write requires of stored values.

pub mod codec;
pub(crate) mod condition;
pub mod entity;
pub mod escape;
pub mod field;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod pk;
pub mod update_op;
